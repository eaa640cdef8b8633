"""A TCP port on 127.0.0.1 forwarded to another address, closed on demand: an outage of a shared service (the
session's schema registry) as one client sees it, at an address it already used, without stopping the service."""

from __future__ import annotations

import select
import socket
import socketserver
import threading


class _Forward(socketserver.BaseRequestHandler):
    server: Forwarder

    def handle(self) -> None:
        with socket.create_connection(self.server.target, timeout=10) as upstream:
            peers = {self.request: upstream, upstream: self.request}
            while not self.server.closed.is_set():
                readable, _, _ = select.select(list(peers), [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)


class Forwarder(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str, port: int) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.target = (host, port)
        self.port: int = self.server_address[1]
        self.closed = threading.Event()
        threading.Thread(target=self.serve_forever, args=(0.1,), daemon=True).start()

    def close(self) -> None:
        """From now on the port refuses connections; open ones are dropped within 0.2 s."""
        self.closed.set()
        self.shutdown()
        self.server_close()

"""A tiny HTTP endpoint for services that are not faust apps: `/healthz`, `/readyz` and `/metrics`.

`/healthz` answers 200 while `live()` is true (the service's loop is turning, or its restore reading), `/readyz`
while `ready()` is true (e.g. joined its consumer group and reached its database), 503 otherwise (with what the
check said, when it says why); `/metrics` serves the given Prometheus registry (the process-wide default one unless
told otherwise). It runs in a daemon thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest


def _always() -> bool:
    return True


class HealthServer:
    def __init__(self, port: int, registry: CollectorRegistry = REGISTRY, ready: Callable[[], bool | str] = _always,
                 live: Callable[[], bool | str] = _always, host: str = "0.0.0.0") -> None:
        self.registry = registry
        self.ready = ready
        self.live = live
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(server.registry), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/readyz"):
                    answer = (server.live if path == "/healthz" else server.ready)()
                    ok = bool(answer) and not isinstance(answer, str)
                    why = f"not ok: {answer}\n".encode() if isinstance(answer, str) else b"not ok\n"
                    self._send(200 if ok else 503, b"ok\n" if ok else why, "text/plain")
                else:
                    self._send(404, b"not found: try /healthz, /readyz or /metrics\n", "text/plain")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the prober gave up waiting; it asks again

            def log_message(self, format: str, *args: object) -> None:
                """Probes every few seconds are not worth a log line."""

        try:
            self._httpd = ThreadingHTTPServer((host, port), Handler)
        except OSError as error:
            raise OSError(f"cannot serve /healthz, /readyz and /metrics on {host}:{port}: {error.strerror} "
                          f"(set REKEY_WEB_PORT to a free port)") from error
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=f"http-{port}", daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

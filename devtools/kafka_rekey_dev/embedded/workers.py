"""Run rekey services as real OS processes (demo, tests, chaos): start, wait until ready, SIGTERM, kill -9."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from kafka_rekey_dev.embedded.errors import NotReady
from kafka_rekey_dev.embedded.processes import port_free, terminate_with_parent

# Below the kernel's ephemeral range, whose ports a client connection may take between the choice and the bind.
SERVICE_PORTS = range(20_000, 32_000)


def _service_port() -> int:
    """A free port of `SERVICE_PORTS`, drawn at random so that processes created together rarely draw the same."""
    for _ in range(100):
        port = random.randrange(SERVICE_PORTS.start, SERVICE_PORTS.stop)
        if port_free(port):
            return port
    raise OSError(f"no free port on 127.0.0.1 in {SERVICE_PORTS.start}-{SERVICE_PORTS.stop - 1}")


class ServiceProcess:
    """`rekey run SERVICE` in a subprocess with its own web port, log file and environment."""

    def __init__(self, service: str, env: Mapping[str, str], log_dir: Path, name: str | None = None,
                 args: Sequence[str] = (), port: int | None = None) -> None:
        """`args` follow `rekey run SERVICE` (e.g. `--stage translate`); `port`, a stopped process's web port, lets
        a restarted worker answer where its scraper looks."""
        self.service = service
        self.args = list(args)
        self.name = name or service
        self.port = port or _service_port()
        self.env = {**os.environ, **env, "REKEY_WEB_PORT": str(self.port)}
        self.log_path = log_dir / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout: float = 90.0) -> ServiceProcess:
        rekey = str(Path(sys.executable).with_name("rekey"))
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [rekey, "run", self.service, *self.args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=terminate_with_parent,
            )
        deadline = time.monotonic() + ready_timeout
        while not self._ready():
            if time.monotonic() > deadline:
                raise NotReady(f"{self.name} not ready on :{self.port} in {ready_timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.5)
        return self

    def _ready(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            code = self.process and self.process.returncode
            raise NotReady(f"{self.name} exited with {code}:\n{self.log_tail()}")
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5).text

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the Prometheus samples `name{...}` whose labels include `labels`."""
        total = 0.0
        for line in self.metrics().splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def terminate(self, timeout: float = 30.0) -> float:
        """SIGTERM and wait; return how long the clean stop took."""
        assert self.process is not None
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout)
        return time.monotonic() - started

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def pause(self) -> None:
        """SIGSTOP the process group: the process neither runs nor heartbeats until `resume`."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.terminate(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def stacks(self) -> str:
        """What every thread of the running process is doing now (py-spy dump, native frames included): for a
        worker that stopped making progress. Appended to its log as well."""
        if self.process is None or self.process.poll() is not None:
            return ""
        spy = Path(sys.executable).with_name("py-spy")
        try:
            dump = subprocess.run([str(spy), "dump", "--native", "--pid", str(self.process.pid)],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"no stacks of {self.name}: {error}"
        text = f"stacks of {self.name} (pid {self.process.pid}):\n{dump.stdout}{dump.stderr}"
        with self.log_path.open("a") as log:
            log.write(text)
        return text

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "".join(self.log_path.read_text(errors="replace").splitlines(keepends=True)[-lines:])

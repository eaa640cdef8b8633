"""An embedded Confluent-API-compatible schema registry on 127.0.0.1: Apicurio Registry from Maven Central.

The artifact is `io.apicurio:apicurio-registry-app:<version>:zip:all`, Apicurio's own ready-to-run Quarkus
distribution (a runner jar plus `lib/`), resolved once into `.cache/dist/` (see `maven.py`). It serves the
Confluent Schema Registry REST API under `/apis/ccompat/v7`, enforcing compatibility levels (BACKWARD, FULL,
...) with its own Avro compatibility checker. Storage is an H2 database file in `<data_dir>/h2/`, so a stop
and start keep every schema and setting; `registry.json` records the port and process id, so
`rekey registry status/stop` work from another process.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from kafka_rekey_dev.embedded import defaults, maven, processes
from kafka_rekey_dev.embedded.errors import EmbeddedInfraError, NotReady, PortInUse

APICURIO_VERSION = "3.0.9"
COORDINATE = f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:zip:all"
DEFAULT_DATA_DIR = defaults.REGISTRY_DATA_DIR
DEFAULT_PORT = defaults.REGISTRY_PORT
CCOMPAT_PATH = "/apis/ccompat/v7"
# A handful of schemas needs little heap; C1-only JIT starts faster and uses less memory.
JVM_OPTS = ["-Xms64m", "-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


@dataclass
class RegistryState:
    port: int
    pid: int | None = None


class SchemaRegistryServer:
    """Start, stop and inspect one embedded registry keeping its data in `data_dir`."""

    def __init__(self, data_dir: Path = DEFAULT_DATA_DIR, port: int | None = None):
        """`port` defaults to the one the registry of `data_dir` last used, else 8081."""
        self.data_dir = Path(data_dir).resolve()
        self.state = self._load_state() or RegistryState(port=DEFAULT_PORT)
        self.requested_port = port
        if port is not None and not self.running():
            self.state.port = port

    @property
    def url(self) -> str:
        """The Confluent-compatible base URL: what `REKEY_REGISTRY_URL` / `SCHEMA_REGISTRY_URL` should hold."""
        return f"http://127.0.0.1:{self.state.port}{CCOMPAT_PATH}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "registry.log"

    def _state_file(self) -> Path:
        return self.data_dir / "registry.json"

    def _load_state(self) -> RegistryState | None:
        path = self._state_file()
        if not path.exists():
            return None
        return RegistryState(**json.loads(path.read_text()))

    def _save_state(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._state_file().write_text(json.dumps(asdict(self.state), indent=2))

    def _command(self) -> list[str]:
        java = maven.require_java()
        home = maven.resolve_distribution(f"apicurio-registry-{APICURIO_VERSION}", COORDINATE)
        runner = home / f"apicurio-registry-app-{APICURIO_VERSION}-runner.jar"
        return [
            java, *JVM_OPTS,
            "-Dquarkus.http.host=127.0.0.1",
            f"-Dquarkus.http.port={self.state.port}",
            "-Dquarkus.http.access-log.enabled=false",
            f"-Dapicurio.datasource.url=jdbc:h2:file:{self.data_dir / 'h2' / 'registry'}",
            "-jar", str(runner),
        ]

    def running(self) -> bool:
        return self.state.pid is not None and processes.alive(self.state.pid)

    def ready(self) -> bool:
        """True when the Confluent-compatible API answers a subject listing."""
        try:
            return httpx.get(f"{self.url}/subjects", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self, timeout: float = 90.0, die_with_caller: bool = False) -> None:
        """Start the registry (fetching it from Maven Central the first time) and wait until it answers.

        With `die_with_caller` (test fixtures) the registry is stopped by the kernel if the calling process
        dies without stopping it; otherwise it runs on detached until `stop`.
        """
        if self.running():
            if self.requested_port not in (None, self.state.port):
                raise EmbeddedInfraError(
                    f"the registry of {self.data_dir} already runs on port {self.state.port}: stop it (`rekey "
                    f"registry stop --data-dir {self.data_dir}`) before starting it on port {self.requested_port}"
                )
            self.wait_ready(timeout)
            return
        if not processes.port_free(self.state.port):
            raise PortInUse(
                f"port {self.state.port} on 127.0.0.1 is in use: stop what holds it, or start the registry with "
                f"another --port (is a registry already running? `rekey registry status`)"
            )
        command = self._command()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=processes.terminate_with_parent if die_with_caller else None,
            )
        self.state.pid = process.pid
        self._save_state()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise NotReady(f"schema registry exited during start-up (log {self.log_file}):\n{self.log_tail()}")
            if self.ready():
                return
            time.sleep(0.2)
        raise NotReady(
            f"schema registry did not answer on {self.url} within {timeout:.0f}s (it is left running: "
            f"`rekey registry stop --data-dir {self.data_dir}`):\n{self.log_tail()}"
        )

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the registry, SIGKILL it after `timeout` seconds. Its data stays in `data_dir`."""
        if self.state.pid is not None:
            processes.stop_group(self.state.pid, timeout)
            self.state.pid = None
            self._save_state()

    def status(self) -> dict[str, object]:
        running = self.running()
        return {
            "data_dir": str(self.data_dir),
            "url": self.url,
            "pid": self.state.pid,
            "running": running,
            "ready": running and self.ready(),
            "artifact": COORDINATE,
        }

    def log_tail(self, lines: int = 30) -> str:
        return f"--- schema registry log tail ---\n{processes.tail(self.log_file, lines)}"

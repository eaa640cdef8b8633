"""An embedded Kafka Connect worker (distributed mode) with Debezium's PostgreSQL connector, on 127.0.0.1.

It is the CDC source of the demo and the tests: Debezium reads a PostgreSQL table's changes (pgoutput) and the
worker writes them as JSON-converter records to `<topic prefix>.<schema>.<table>` on the broker it is given.
The jars are the official artifacts from Maven Central, on one classpath (bundle `connect-<kafka version>`, see
`maven.py`). Connector configs, source offsets and statuses live in the worker's three storage topics on that
broker, which it creates itself, so a stop + start resumes every connector where it left off. `<data_dir>` holds
the worker properties, the log and `connect.json` (port, broker, group, process id), so `rekey connect
status/stop` work from another process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from kafka_rekey_dev.embedded import defaults, maven, processes
from kafka_rekey_dev.embedded.errors import EmbeddedInfraError, NotReady, PortInUse

DEFAULT_DATA_DIR = defaults.CONNECT_DATA_DIR
DEFAULT_PORT = defaults.CONNECT_PORT
DEFAULT_BOOTSTRAP = f"127.0.0.1:{defaults.KAFKA_BASE_PORT}"
DEFAULT_GROUP_ID = "rekey-connect"
BUNDLE = f"connect-{maven.KAFKA_VERSION}"
POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
# One connector with one task needs little heap; C1-only JIT starts faster and uses less memory.
JVM_OPTS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]

_LOG4J2 = """status = error
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = STDOUT
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""


class ConnectError(EmbeddedInfraError):
    """The worker's REST API refused a request, or a connector or task failed."""


@dataclass
class ConnectState:
    port: int
    bootstrap_servers: str
    group_id: str
    pid: int | None = None


def postgres_connector_config(
    *,
    topic_prefix: str,
    database: str,
    host: str,
    port: int,
    user: str,
    password: str,
    table_include_list: Sequence[str] | None = None,
    schema_include_list: Sequence[str] | None = None,
    slot_name: str,
    publication_name: str,
    heartbeat_ms: int | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The config of a Debezium PostgreSQL connector as rekey's `debezium` source format expects it: pgoutput, a
    publication of the included tables only, an initial snapshot, JSON keys and values with their schemas.
    `extra` overrides any setting (e.g. `time.precision.mode`, `value.converter.schemas.enable`)."""
    config = {
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": host,
        "database.port": str(port),
        "database.user": user,
        "database.password": password,
        "database.dbname": database,
        "topic.prefix": topic_prefix,
        "slot.name": slot_name,
        "publication.name": publication_name,
        "publication.autocreate.mode": "filtered",
        "snapshot.mode": "initial",
        # The connector creates its topics itself: brokers here (and in production) do not auto-create them.
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "4",
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "true",
    }
    if table_include_list:
        config["table.include.list"] = ",".join(table_include_list)
    if schema_include_list:
        config["schema.include.list"] = ",".join(schema_include_list)
    if heartbeat_ms is not None:
        config["heartbeat.interval.ms"] = str(heartbeat_ms)
    return config | (extra or {})


class ConnectWorker:
    """Start, stop and inspect one embedded Connect worker keeping its files in `data_dir`, and manage its
    connectors through the REST API."""

    def __init__(self, data_dir: Path = DEFAULT_DATA_DIR, bootstrap_servers: str | None = None,
                 port: int | None = None, group_id: str | None = None, replication_factor: int = 1):
        """`port`, `bootstrap_servers` and `group_id` default to what the worker of `data_dir` last used, else
        8083, the embedded broker's default address and `rekey-connect`. The storage topics are named after the
        group and created with `replication_factor`."""
        self.data_dir = Path(data_dir).resolve()
        self.state = self._load_state() or ConnectState(
            port=DEFAULT_PORT, bootstrap_servers=DEFAULT_BOOTSTRAP, group_id=DEFAULT_GROUP_ID)
        self.requested = {"port": port, "bootstrap_servers": bootstrap_servers, "group_id": group_id}
        if not self.running():
            for key, value in self.requested.items():
                if value is not None:
                    setattr(self.state, key, value)
        self.replication_factor = replication_factor

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.state.port}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "connect.log"

    @property
    def storage_topics(self) -> dict[str, str]:
        group = self.state.group_id
        return {"config": f"{group}-configs", "offset": f"{group}-offsets", "status": f"{group}-status"}

    # -- state ---------------------------------------------------------------------------------------
    def _state_file(self) -> Path:
        return self.data_dir / "connect.json"

    def _load_state(self) -> ConnectState | None:
        path = self._state_file()
        if not path.exists():
            return None
        return ConnectState(**json.loads(path.read_text()))

    def _save_state(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._state_file().write_text(json.dumps(asdict(self.state), indent=2))

    # -- configuration -------------------------------------------------------------------------------
    def _properties(self) -> str:
        topics = self.storage_topics
        return "\n".join([
            f"bootstrap.servers={self.state.bootstrap_servers}",
            f"group.id={self.state.group_id}",
            f"listeners=http://127.0.0.1:{self.state.port}",
            "rest.advertised.host.name=127.0.0.1",
            f"rest.advertised.port={self.state.port}",
            f"key.converter={JSON_CONVERTER}",
            f"value.converter={JSON_CONVERTER}",
            "key.converter.schemas.enable=true",
            "value.converter.schemas.enable=true",
            *(f"{kind}.storage.topic={name}" for kind, name in topics.items()),
            *(f"{kind}.storage.replication.factor={self.replication_factor}" for kind in topics),
            "offset.storage.partitions=5",
            "status.storage.partitions=1",
            # Debezium confirms a position to the replication slot only when its offsets are flushed: flushing
            # every second keeps the WAL the slot holds back small and a restart's redelivery short.
            "offset.flush.interval.ms=1000",
            # A worker that comes back after a kill gets its connectors at once, not after the default 5 min
            # that cooperative rebalancing waits for a departed worker to return.
            "scheduled.rebalance.max.delay.ms=0",
            # Every jar on the classpath declares its plugins (ServiceLoader): no reflective scan at start.
            "plugin.discovery=service_load",
            "",
        ])

    def _write_config(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "worker.properties").write_text(self._properties())
        (self.data_dir / "log4j2.properties").write_text(_LOG4J2)

    def _command(self) -> list[str]:
        java = maven.require_java()
        jars = maven.resolve(BUNDLE)
        return [
            java, *JVM_OPTS, f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            "-cp", f"{jars}/*", "org.apache.kafka.connect.cli.ConnectDistributed",
            str(self.data_dir / "worker.properties"),
        ]

    # -- lifecycle -----------------------------------------------------------------------------------
    def running(self) -> bool:
        return self.state.pid is not None and processes.alive(self.state.pid)

    def ready(self) -> bool:
        """True when the REST API answers, the worker has joined its group and Debezium's connector is loaded."""
        try:
            if httpx.get(self.url, timeout=2.0).status_code != 200:
                return False
            # 200 once the worker has read its config topic and joined the group (503 before).
            if httpx.get(f"{self.url}/health", timeout=2.0).status_code != 200:
                return False
            plugins = httpx.get(f"{self.url}/connector-plugins", timeout=2.0)
        except httpx.HTTPError:
            return False
        return plugins.status_code == 200 and any(p.get("class") == POSTGRES_CONNECTOR for p in plugins.json())

    def start(self, timeout: float = 120.0, die_with_caller: bool = False) -> None:
        """Start the worker (resolving its jars from Maven Central the first time) and wait until it is ready.

        With `die_with_caller` (test fixtures) the worker is stopped by the kernel if the calling process dies
        without stopping it; otherwise it runs on detached until `stop`.
        """
        self.launch(die_with_caller)
        self.wait_ready(timeout)

    def launch(self, die_with_caller: bool = False) -> None:
        """`start` without the wait: the worker's JVM is started (unless it runs already) and starts up while the
        caller does something else; `wait_ready` waits for it."""
        if self.running():
            for key, value in self.requested.items():
                if value not in (None, getattr(self.state, key)):
                    raise EmbeddedInfraError(
                        f"the Connect worker of {self.data_dir} already runs with {key.replace('_', ' ')} "
                        f"{getattr(self.state, key)}: stop it (`rekey connect stop --data-dir {self.data_dir}`) "
                        f"before starting it with {value}"
                    )
            return
        if not processes.port_free(self.state.port):
            raise PortInUse(
                f"port {self.state.port} on 127.0.0.1 is in use: stop what holds it, or start the Connect worker "
                f"with another --port (is a worker already running? `rekey connect status`)"
            )
        command = self._command()
        self._write_config()
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=processes.terminate_with_parent if die_with_caller else None,
            )
        self.state.pid = process.pid
        self._save_state()

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise NotReady(f"the Connect worker exited during start-up (log {self.log_file}):\n{self.log_tail()}")
            if self.ready():
                return
            time.sleep(0.3)
        raise NotReady(
            f"the Connect worker did not become ready on {self.url} within {timeout:.0f}s (broker "
            f"{self.state.bootstrap_servers}; it is left running: `rekey connect stop --data-dir {self.data_dir}`):"
            f"\n{self.log_tail()}"
        )

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the worker (its tasks stop and flush their offsets), SIGKILL it after `timeout` seconds."""
        if self.state.pid is not None:
            processes.stop_group(self.state.pid, timeout)
            self.state.pid = None
            self._save_state()

    def kill(self) -> None:
        """SIGKILL the worker's process group: it is gone at once and flushes nothing (offsets since the last
        flush are redelivered by the next worker)."""
        if self.state.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.state.pid, signal.SIGKILL)
            while processes.alive(self.state.pid):
                time.sleep(0.05)
            self.state.pid = None
            self._save_state()

    def status(self) -> dict[str, object]:
        running = self.running()
        ready = running and self.ready()
        connectors: list[str] = []
        if ready:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                connectors = httpx.get(f"{self.url}/connectors", timeout=2.0).json()
        return {
            "data_dir": str(self.data_dir),
            "url": self.url,
            "bootstrap_servers": self.state.bootstrap_servers,
            "group_id": self.state.group_id,
            "storage_topics": self.storage_topics,
            "pid": self.state.pid,
            "running": running,
            "ready": ready,
            "connectors": connectors,
        }

    def log_tail(self, lines: int = 30) -> str:
        return f"--- Connect worker log tail ---\n{processes.tail(self.log_file, lines)}"

    # -- connectors ----------------------------------------------------------------------------------
    def _request(self, method: str, path: str, patience: float = 30.0, **kwargs: Any) -> httpx.Response:
        """A REST call, asked again while the worker answers 409 (a rebalance, or a config change in flight)."""
        deadline = time.monotonic() + patience
        while True:
            try:
                response = httpx.request(method, f"{self.url}{path}", timeout=30.0, **kwargs)
            except httpx.HTTPError as error:
                raise ConnectError(f"the Connect worker on {self.url} is out of reach: {error}") from error
            if response.status_code != 409 or time.monotonic() > deadline:
                return response
            time.sleep(0.3)

    @staticmethod
    def _refused(action: str, response: httpx.Response) -> ConnectError:
        try:
            message = response.json().get("message", response.text)
        except ValueError:
            message = response.text
        return ConnectError(f"{action}: HTTP {response.status_code}: {message}")

    def put_connector(self, name: str, config: dict[str, str]) -> dict[str, Any]:
        """Create connector `name`, or replace its config; the worker's answer (name, config, tasks)."""
        response = self._request("PUT", f"/connectors/{name}/config", json=config)
        if response.status_code not in (200, 201):
            raise self._refused(f"connector {name!r} refused", response)
        result: dict[str, Any] = response.json()
        return result

    def connector_status(self, name: str) -> dict[str, Any] | None:
        """The connector's and its tasks' states (`GET /connectors/{name}/status`); None if the worker does not
        know it (yet)."""
        response = self._request("GET", f"/connectors/{name}/status")
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise self._refused(f"status of connector {name!r}", response)
        result: dict[str, Any] = response.json()
        return result

    def wait_connector_running(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        """Wait until the connector and each of its tasks are RUNNING; raise with the trace of a FAILED one."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            status = self.connector_status(name)
            if status is not None:
                connector, tasks = status["connector"], status.get("tasks", [])
                for part, state in [("connector", connector), *((f"task {t['id']}", t) for t in tasks)]:
                    if state["state"] == "FAILED":
                        raise ConnectError(f"connector {name!r}: {part} FAILED:\n{state.get('trace', '')}")
                if connector["state"] == "RUNNING" and tasks and all(t["state"] == "RUNNING" for t in tasks):
                    return status
            time.sleep(0.3)
        raise ConnectError(f"connector {name!r} not running within {timeout:.0f}s (last status {status}):\n"
                           f"{self.log_tail()}")

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        """The source offsets the worker has flushed for connector `name` (`GET /connectors/{name}/offsets`, KIP-875):
        one `{"partition": ..., "offset": ...}` per source partition."""
        response = self._request("GET", f"/connectors/{name}/offsets")
        if response.status_code != 200:
            raise self._refused(f"offsets of connector {name!r}", response)
        offsets: list[dict[str, Any]] = response.json().get("offsets", [])
        return offsets

    def snapshot_flushed(self, name: str) -> bool:
        """Whether the offset flushed for Debezium's connector `name` is past its initial snapshot (marked completed,
        or a streaming one): a worker killed before then snapshots every row again when it restarts."""
        return any(entry["offset"].get("snapshot_completed") is True or "snapshot" not in entry["offset"]
                   for entry in self.connector_offsets(name))

    def delete_connector(self, name: str) -> None:
        """Remove the connector (a no-op if it is not there). Its replication slot and publication stay in the
        database, and its offsets in the offset topic."""
        response = self._request("DELETE", f"/connectors/{name}")
        if response.status_code not in (204, 404):
            raise self._refused(f"deleting connector {name!r}", response)

    def restart_connector(self, name: str) -> None:
        """Restart the connector and all its tasks (failed or not)."""
        response = self._request("POST", f"/connectors/{name}/restart", params={"includeTasks": "true"})
        if response.status_code not in (200, 202, 204):
            raise self._refused(f"restarting connector {name!r}", response)

"""An embedded Apache Kafka cluster (KRaft, combined broker+controller nodes) on 127.0.0.1.

The jars are the official `org.apache.kafka` artifacts from Maven Central (see `maven.py`). Each node lives
in `<data_dir>/node-<id>/` with its own properties, log and data; `cluster.json` records the cluster id,
ports and process ids, so `rekey broker status/stop` work from another process and a stop + start keeps
every record.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafka_rekey_dev.embedded import defaults, maven, processes
from kafka_rekey_dev.embedded.errors import EmbeddedInfraError, NotReady, PortInUse

DEFAULT_DATA_DIR = defaults.KAFKA_DATA_DIR
DEFAULT_BASE_PORT = defaults.KAFKA_BASE_PORT
CONTROLLER_PORT_OFFSET = 100
SASL_PORT_OFFSET = 200
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
JVM_OPTS = ["-Xms256m", "-Xmx768m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]

_LOG4J2 = """status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""


@dataclass
class ClusterState:
    cluster_id: str
    nodes: int
    base_port: int
    pids: dict[str, int] = field(default_factory=dict)
    sasl_users: dict[str, str] = field(default_factory=dict)


def ephemeral_port_range() -> range:
    """The ports the kernel hands to outgoing connections (Linux; IANA's range elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(49152, 65536)


def free_base_port(nodes: int, start: int = 29092) -> int:
    """A base port such that every broker and controller port of an `nodes`-node cluster is free and outside the
    ephemeral range: a client reconnecting to a stopped broker can otherwise be given that broker's port as its own
    local port (or connect to itself), and the broker cannot bind it again when it restarts."""
    ephemeral = ephemeral_port_range()
    for base in range(start, 65536 - SASL_PORT_OFFSET - nodes, 10):
        ports = [base + offset + i for offset in (0, CONTROLLER_PORT_OFFSET, SASL_PORT_OFFSET) for i in range(nodes)]
        if any(p in ephemeral for p in ports):
            continue
        if all(processes.port_free(p) for p in ports):
            return base
    raise PortInUse(f"no free port range outside the ephemeral ports {ephemeral.start}-{ephemeral.stop - 1} "
                    "found for an embedded Kafka cluster")


class KafkaCluster:
    """Start, stop and inspect an embedded KRaft cluster of 1 or 3 nodes."""

    def __init__(self, data_dir: Path = DEFAULT_DATA_DIR, nodes: int = 1, base_port: int = DEFAULT_BASE_PORT,
                 die_with_caller: bool = False, sasl_users: dict[str, str] | None = None):
        """With `die_with_caller` (test fixtures) the kernel stops the nodes if the caller dies without stopping
        them; otherwise they run on detached until `stop`. `sasl_users` (name -> password) adds a SASL_PLAINTEXT
        listener taking PLAIN and SCRAM-SHA-256/512 for them (`sasl_bootstrap_servers`), to test clients' auth."""
        self.data_dir = Path(data_dir).resolve()
        self.die_with_caller = die_with_caller
        saved = self._load_state()
        if saved is not None:
            nodes, base_port = saved.nodes, saved.base_port
        if nodes not in (1, 3):
            raise EmbeddedInfraError(f"--nodes must be 1 or 3, got {nodes}")
        self.state = saved or ClusterState(
            cluster_id=base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="),
            nodes=nodes,
            base_port=base_port,
            sasl_users=dict(sasl_users or {}),
        )

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.state.nodes + 1))

    def broker_port(self, node_id: int) -> int:
        return self.state.base_port + node_id - 1

    def controller_port(self, node_id: int) -> int:
        return self.state.base_port + CONTROLLER_PORT_OFFSET + node_id - 1

    def sasl_port(self, node_id: int) -> int:
        return self.state.base_port + SASL_PORT_OFFSET + node_id - 1

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.broker_port(n)}" for n in self.node_ids)

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        if not self.state.sasl_users:
            return None
        return ",".join(f"127.0.0.1:{self.sasl_port(n)}" for n in self.node_ids)

    def node_dir(self, node_id: int) -> Path:
        return self.data_dir / f"node-{node_id}"

    def server_log(self, node_id: int) -> Path:
        return self.node_dir(node_id) / "server.log"

    # -- state ---------------------------------------------------------------------------------------
    def _state_file(self) -> Path:
        return self.data_dir / "cluster.json"

    def _load_state(self) -> ClusterState | None:
        path = self._state_file()
        if not path.exists():
            return None
        return ClusterState(**json.loads(path.read_text()))

    def _save_state(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._state_file().write_text(json.dumps(asdict(self.state), indent=2))

    # -- configuration -------------------------------------------------------------------------------
    def _properties(self, node_id: int) -> str:
        replication = 3 if self.state.nodes == 3 else 1
        voters = ",".join(f"{n}@127.0.0.1:{self.controller_port(n)}" for n in self.node_ids)
        sasl = f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port(node_id)}" if self.state.sasl_users else ""
        return "\n".join([
            "process.roles=broker,controller",
            f"node.id={node_id}",
            f"controller.quorum.voters={voters}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.broker_port(node_id)},"
            f"CONTROLLER://127.0.0.1:{self.controller_port(node_id)}{sasl}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.broker_port(node_id)}{sasl}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            *self._sasl_properties(),
            "inter.broker.listener.name=PLAINTEXT",
            f"log.dirs={self.node_dir(node_id) / 'data'}",
            "auto.create.topics.enable=false",
            f"default.replication.factor={replication}",
            f"offsets.topic.replication.factor={replication}",
            "offsets.topic.num.partitions=10",
            f"transaction.state.log.replication.factor={replication}",
            f"transaction.state.log.min.isr={2 if replication == 3 else 1}",
            "transaction.state.log.num.partitions=10",
            f"share.coordinator.state.topic.replication.factor={replication}",
            f"share.coordinator.state.topic.min.isr={2 if replication == 3 else 1}",
            # Tests and demos join groups in seconds rather than after the production 3 s delay.
            "group.initial.rebalance.delay.ms=0",
            "group.consumer.heartbeat.interval.ms=1000",
            "group.consumer.min.heartbeat.interval.ms=1000",
            "log.segment.bytes=67108864",
            "",
        ])

    def _sasl_properties(self) -> list[str]:
        """PLAIN checks the passwords of its JAAS entry; SCRAM the credentials `_format` stores in the metadata."""
        if not self.state.sasl_users:
            return []
        plain_users = " ".join(f'user_{name}="{password}"' for name, password in self.state.sasl_users.items())
        prefix = "listener.name.sasl_plaintext"
        return [
            f"sasl.enabled.mechanisms={','.join(SASL_MECHANISMS)}",
            f"{prefix}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            f"{plain_users};",
            *(f"{prefix}.{mechanism.lower()}.sasl.jaas.config="
              "org.apache.kafka.common.security.scram.ScramLoginModule required;"
              for mechanism in SASL_MECHANISMS[1:]),
        ]

    def _write_config(self, node_id: int) -> None:
        directory = self.node_dir(node_id)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "server.properties").write_text(self._properties(node_id))
        (directory / "log4j2.properties").write_text(_LOG4J2.format(log=self.server_log(node_id)))

    def _java(self, node_id: int, main: str, *args: str, gc_log: bool = False) -> list[str]:
        java = maven.require_java()
        jars = maven.resolve(f"kafka-{maven.KAFKA_VERSION}")
        log4j = self.node_dir(node_id) / "log4j2.properties"
        # As kafka-server-start.sh does (-loggc): the pauses, to tell a broker's stall from the client's.
        gc_file = self.node_dir(node_id) / "gc.log"
        gc = [f"-Xlog:gc:file={gc_file}:time,uptime:filecount=2,filesize=20M"] if gc_log else []
        return [java, *JVM_OPTS, *gc, f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{jars}/*", main, *args]

    def _format(self, node_id: int) -> None:
        if (self.node_dir(node_id) / "data" / "meta.properties").exists():
            return
        config = str(self.node_dir(node_id) / "server.properties")
        scram = [f"--add-scram={mechanism}=[name={name},password={password}]"
                 for name, password in self.state.sasl_users.items() for mechanism in SASL_MECHANISMS[1:]]
        result = subprocess.run(
            # `=`: a base64 cluster id may start with "-", which argparse would take for an option.
            self._java(node_id, "kafka.tools.StorageTool", "format", f"--cluster-id={self.state.cluster_id}",
                       "--config", config, *scram),
            capture_output=True, text=True, check=False,
        )
        if result.returncode != 0:
            raise EmbeddedInfraError(f"formatting node {node_id} failed:\n{result.stdout}{result.stderr}")

    # -- lifecycle -----------------------------------------------------------------------------------
    def running_nodes(self) -> list[int]:
        return [n for n in self.node_ids if (pid := self.state.pids.get(str(n))) and processes.alive(pid)]

    def start(self, timeout: float = 90.0) -> None:
        for node_id in self.node_ids:
            self.start_node(node_id, wait=False)
        self.wait_ready(timeout)

    def start_node(self, node_id: int, wait: bool = True, timeout: float = 60.0) -> None:
        if node_id in self.running_nodes():
            return
        ports = [self.broker_port(node_id), self.controller_port(node_id)]
        for port in ports + ([self.sasl_port(node_id)] if self.state.sasl_users else []):
            if not processes.port_free(port):
                raise PortInUse(
                    f"port {port} on 127.0.0.1 is in use: stop what holds it, or start with another --port / "
                    f"--data-dir (is another broker running? `rekey broker status`)"
                )
        self._write_config(node_id)
        self._format(node_id)
        with (self.node_dir(node_id) / "stdout.log").open("ab") as out:
            process = subprocess.Popen(
                self._java(node_id, "kafka.Kafka", str(self.node_dir(node_id) / "server.properties"), gc_log=True),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=processes.terminate_with_parent if self.die_with_caller else None,
            )
        self.state.pids[str(node_id)] = process.pid
        self._save_state()
        if wait:
            self._wait_port(node_id, timeout)

    def _wait_port(self, node_id: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node_id not in self.running_nodes():
                raise NotReady(f"Kafka node {node_id} exited during start-up:\n{self.log_tail(node_id)}")
            if processes.port_open(self.broker_port(node_id)):
                return
            time.sleep(0.2)
        raise NotReady(f"Kafka node {node_id} did not open its port in {timeout:.0f}s:\n{self.log_tail(node_id)}")

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Wait until every node has registered with the quorum and the cluster answers metadata requests."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        for node_id in self.node_ids:
            self._wait_port(node_id, max(1.0, deadline - time.monotonic()))
        seen = 0
        with AdminClient({"bootstrap.servers": self.bootstrap_servers}) as admin:
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception):
                    seen = len(admin.list_topics(timeout=2).brokers)
                    if seen == self.state.nodes:
                        return
                time.sleep(0.3)
        tails = "\n".join(self.log_tail(n) for n in self.node_ids)
        raise NotReady(f"Kafka cluster not ready in {timeout:.0f}s ({seen}/{self.state.nodes} brokers):\n{tails}")

    def stop_node(self, node_id: int, hard: bool = False, timeout: float = 30.0) -> None:
        pid = self.state.pids.get(str(node_id))
        if pid is None or not processes.alive(pid):
            return
        os.killpg(pid, signal.SIGKILL if hard else signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while processes.alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if processes.alive(pid):
            os.killpg(pid, signal.SIGKILL)
            while processes.alive(pid):
                time.sleep(0.05)

    def stop(self, timeout: float = 30.0) -> None:
        running = self.running_nodes()
        for node_id in running:
            pid = self.state.pids[str(node_id)]
            os.killpg(pid, signal.SIGTERM)
        for node_id in running:
            self.stop_node(node_id, timeout=timeout)

    def status(self) -> dict[str, object]:
        running = self.running_nodes()
        return {
            "data_dir": str(self.data_dir),
            "bootstrap_servers": self.bootstrap_servers,
            "cluster_id": self.state.cluster_id,
            "nodes": [
                {
                    "node_id": n,
                    "pid": self.state.pids.get(str(n)),
                    "running": n in running,
                    "port": self.broker_port(n),
                    "listening": n in running and processes.port_open(self.broker_port(n)),
                }
                for n in self.node_ids
            ],
        }

    def log_tail(self, node_id: int, lines: int = 25) -> str:
        text = ""
        for path in (self.server_log(node_id), self.node_dir(node_id) / "stdout.log"):
            if path.exists():
                text += "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
        return f"--- node {node_id} log tail ---\n{text}"

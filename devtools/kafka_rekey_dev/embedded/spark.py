"""An embedded Spark standalone cluster on 127.0.0.1: one master and two one-core workers, from the installed pyspark.

It is where `rekey backfill --master spark://127.0.0.1:7077` runs the backfill as on a real cluster: each worker
launches its application's executor in a JVM of its own, the executors start their own Python workers and
exchange the shuffle between them. The daemons are Spark's own classes started with pyspark's `spark-class`
(SPARK_HOME = the pyspark package). `<data_dir>` holds `spark.json` (ports, process ids), the daemons' logs, each
worker's work directory (executor logs, the jars and archives shipped to it) and scratch space, so `rekey spark
status/stop` work from another process. `session_conf` is what a job needs to run on it from this checkout: the
Kafka connector's cached jars, rekey's code as a pyFiles archive and this venv's Python for the executors.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from kafka_rekey_dev.embedded import defaults, maven, processes
from kafka_rekey_dev.embedded.errors import EmbeddedInfraError, NotReady, PortInUse

DEFAULT_DATA_DIR = defaults.SPARK_DATA_DIR
DEFAULT_PORT = defaults.SPARK_PORT
DEFAULT_UI_PORT = defaults.SPARK_UI_PORT
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"
# Heap of the master and worker daemons themselves; executors get spark.executor.memory.
DAEMON_MEMORY = "256m"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def pyspark_home() -> Path:
    """The installed pyspark package, which is a complete Spark distribution (bin/, jars/)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise EmbeddedInfraError("pyspark is not installed: pip install -e '.[spark]'")
    return Path(spec.origin).parent


def dev_connector_jars() -> list[str] | None:
    """The Kafka connector's jars from this checkout's cache when they were fetched (`make install` / a test
    run), else None: the session then finds them through its own configuration."""
    if not (maven.JAR_CACHE / f"spark-kafka-{maven.SPARK_VERSION}" / ".complete").exists():
        return None
    return [str(jar) for jar in maven.spark_connector_jars()]


def job_environment() -> dict[str, str]:
    """What a `rekey backfill` or `rekey verify` process started from this checkout needs in its environment: the
    connector's cached jars as `$REKEY_SPARK_JARS`, when they were fetched."""
    jars = dev_connector_jars()
    return {"REKEY_SPARK_JARS": ",".join(jars)} if jars else {}


@dataclass
class SparkState:
    port: int
    ui_port: int
    pids: dict[str, int] = field(default_factory=dict)


class SparkCluster:
    """Start, stop and inspect one embedded standalone cluster keeping its files in `data_dir`."""

    def __init__(self, data_dir: Path = DEFAULT_DATA_DIR, port: int | None = None, ui_port: int | None = None):
        """`port` and `ui_port` default to what the cluster of `data_dir` last used, else 7077 and 8080."""
        self.data_dir = Path(data_dir).resolve()
        self.state = self._load_state() or SparkState(port=DEFAULT_PORT, ui_port=DEFAULT_UI_PORT)
        self.requested = {"port": port, "ui_port": ui_port}
        if not self.running():
            for key, value in self.requested.items():
                if value is not None:
                    setattr(self.state, key, value)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.state.port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.state.ui_port}"

    def log_file(self, daemon: str) -> Path:
        return self.data_dir / f"{daemon}.log"

    # -- state ---------------------------------------------------------------------------------------
    def _state_file(self) -> Path:
        return self.data_dir / "spark.json"

    def _load_state(self) -> SparkState | None:
        path = self._state_file()
        if not path.exists():
            return None
        return SparkState(**json.loads(path.read_text()))

    def _save_state(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._state_file().write_text(json.dumps(asdict(self.state), indent=2))

    # -- processes -----------------------------------------------------------------------------------
    def _commands(self) -> dict[str, list[str]]:
        spark_class = str(pyspark_home() / "bin" / "spark-class")
        commands = {"master": [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.state.port),
                               "--webui-port", str(self.state.ui_port)]}
        for index in range(1, WORKERS + 1):
            work = self.data_dir / f"worker-{index}"
            # Web UI port 0: the kernel picks one, so no worker clashes with the registry's 8081.
            commands[f"worker-{index}"] = [
                spark_class, WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(WORKER_CORES),
                "--memory", WORKER_MEMORY, "--webui-port", "0", "--work-dir", str(work / "work"), self.master_url,
            ]
        return commands

    def _environment(self, daemon: str) -> dict[str, str]:
        scratch = self.data_dir / daemon / "tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        return {
            **os.environ,
            "SPARK_HOME": str(pyspark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            # Shuffle files and executors' scratch space, inside the cluster's directory.
            "SPARK_LOCAL_DIRS": str(scratch),
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        }

    def running(self) -> bool:
        return bool(self.state.pids) and all(processes.alive(pid) for pid in self.state.pids.values())

    def master_json(self) -> dict[str, Any] | None:
        """The master's view (`/json/`: workers, cores, active and completed applications), None when it is out
        of reach."""
        try:
            response = httpx.get(f"{self.ui_url}/json/", timeout=2.0)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        result: dict[str, Any] = response.json()
        return result

    def ready(self) -> bool:
        """True when the master is ALIVE and every worker has registered with it."""
        view = self.master_json()
        return (view is not None and view.get("status") == "ALIVE"
                and view.get("aliveworkers", 0) >= WORKERS and view.get("cores", 0) >= WORKERS * WORKER_CORES)

    def start(self, timeout: float = 90.0, die_with_caller: bool = False) -> None:
        """Start the master and the workers and wait until every worker has registered.

        With `die_with_caller` (test fixtures) the daemons are stopped by the kernel if the calling process dies
        without stopping them; otherwise they run on detached until `stop`.
        """
        if self.running():
            for key, value in self.requested.items():
                if value not in (None, getattr(self.state, key)):
                    raise EmbeddedInfraError(
                        f"the Spark cluster of {self.data_dir} already runs with {key.replace('_', ' ')} "
                        f"{getattr(self.state, key)}: stop it (`rekey spark stop --data-dir {self.data_dir}`) "
                        f"before starting it with {value}"
                    )
            self.wait_ready(timeout)
            return
        self.stop()  # a daemon left over from a half-dead cluster
        for port, what in ((self.state.port, "--port"), (self.state.ui_port, "--ui-port")):
            if not processes.port_free(port):
                raise PortInUse(f"port {port} on 127.0.0.1 is in use: stop what holds it, or start the Spark "
                                f"cluster with another {what} (is one already running? `rekey spark status`)")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for daemon, command in self._commands().items():
            with self.log_file(daemon).open("ab") as log:
                process = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self._environment(daemon), cwd=self.data_dir, start_new_session=True,
                    preexec_fn=processes.terminate_with_parent if die_with_caller else None,
                )
            self.state.pids[daemon] = process.pid
            self._save_state()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [daemon for daemon, pid in self.state.pids.items() if not processes.alive(pid)]
            if dead:
                raise NotReady(f"the Spark {dead[0]} exited during start-up (log {self.log_file(dead[0])}):\n"
                               f"{self.log_tail(dead[0])}")
            if self.ready():
                return
            time.sleep(0.3)
        raise NotReady(
            f"the Spark cluster did not get {WORKERS} workers registered with {self.master_url} within "
            f"{timeout:.0f}s (it is left running: `rekey spark stop --data-dir {self.data_dir}`):\n"
            f"{self.log_tail('master')}"
        )

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM each daemon's process group (a worker's executors and their Python workers with it), workers
        first, then SIGKILL what is left after `timeout` seconds."""
        for daemon in sorted(self.state.pids, key=lambda name: name == "master"):
            processes.stop_group(self.state.pids[daemon], timeout)
        if self.state.pids:
            self.state.pids = {}
            self._save_state()

    def status(self) -> dict[str, object]:
        running = self.running()
        view = self.master_json() if running else None
        return {
            "data_dir": str(self.data_dir),
            "master": self.master_url,
            "ui": self.ui_url,
            "pids": self.state.pids,
            "running": running,
            "ready": running and self.ready(),
            "cores": (view or {}).get("cores", 0),
            "workers": [
                {"id": w.get("id"), "state": w.get("state"), "cores": w.get("cores"),
                 "cores_used": w.get("coresused"), "memory_mb": w.get("memory"), "ui": w.get("webuiaddress")}
                for w in (view or {}).get("workers", [])
            ],
            "active_apps": [
                {"id": a.get("id"), "name": a.get("name"), "state": a.get("state"), "cores": a.get("cores"),
                 "duration_s": round(a.get("duration", 0) / 1000, 1)}
                for a in (view or {}).get("activeapps", [])
            ],
            "completed_apps": len((view or {}).get("completedapps", [])),
        }

    def log_tail(self, daemon: str, lines: int = 30) -> str:
        return f"--- Spark {daemon} log tail ---\n{processes.tail(self.log_file(daemon), lines)}"

    # -- jobs ----------------------------------------------------------------------------------------
    def session_conf(self) -> dict[str, str]:
        """The Spark properties of a job on this cluster from this checkout: rekey's code shipped as a pyFiles
        archive (built from the checkout), this venv's Python on the executors, the connector's cached jars
        (fetched from Maven Central the first time), the driver reachable on 127.0.0.1, one-core executors."""
        from kafka_rekey.spark_backfill.pyfiles import build_archive

        cores = WORKERS * WORKER_CORES
        return {
            "spark.submit.pyFiles": str(build_archive(self.data_dir / "dist")),
            "spark.pyspark.python": sys.executable,
            "spark.jars": ",".join(str(jar) for jar in maven.spark_connector_jars()),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.cores": str(WORKER_CORES),
            "spark.executor.memory": WORKER_MEMORY,
            "spark.cores.max": str(cores),
            "spark.sql.shuffle.partitions": str(4 * cores),
            "spark.default.parallelism": str(cores),
            # Executors on one host would read each other's shuffle files from disk: fetch them over the
            # network, as executors on different hosts do.
            "spark.shuffle.readHostLocalDisk": "false",
        }


    def write_job_properties(self) -> Path:
        """`session_conf` as a Spark properties file in the data dir, for `rekey backfill --properties-file`."""
        path = self.data_dir / "job.properties"
        path.write_text("".join(f"{key} {value}\n" for key, value in sorted(self.session_conf().items())))
        return path


def cluster_for(master: str | None, data_dir: Path = DEFAULT_DATA_DIR) -> SparkCluster | None:
    """The embedded cluster whose master `master` is, when it runs; None for any other master."""
    if not master or not master.startswith("spark://"):
        return None
    with contextlib.suppress(ValueError, OSError):
        cluster = SparkCluster(data_dir)
        if cluster.running() and cluster.master_url == master.rstrip("/"):
            return cluster
    return None

"""The `backfill` fault scenario: `rekey backfill` republishes the whole history while a fault hits its write stage,
after a first write task committed and while others hold open transactions: kill -9 of the Python workers (the
children of PySpark's daemon), or, on a standalone cluster (`master` spark://...), of an executor JVM. Spark
retries the failed tasks; each retry fences its predecessor's transaction and writes nothing if that one had
committed. The job must complete, the verification of the faulted family must pass without redeliveries allowed,
and the manifest check must find every record of every family once (read_committed), dense and in order. The
other families' backfills and the verification run on the calling process's Spark session (the tests' when there
is one): only the faulted run needs a process of its own to kill.

The helpers also drive the driver-kill test (tests/spark_backfill): a backfill killed whole, then resumed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from services.devtools.chaos.harness import ChaosEnv, ChaosResult, ChaosRun, Fault, chaos_run
from services.devtools.chaos.traffic import TrafficPlan
from services.handoff import read_handoff, read_runs, run_key
from services.settings import KafkaSettings, RegistrySettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Log = Callable[[str], None]
WRITE_PARTITIONS = 16
"""Write tasks of a scenario run: more than its cores, so tasks are still to run when the first commits."""
TIMEOUT = 600.0


def rekey_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "rekey"), *args]


def start_backfill(env: ChaosEnv, source: str, family: str, master: str, report: Path, log_file: Path,
                   conf: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`rekey backfill` in a process group of its own (driver, JVM, Python workers: one kill takes them all)."""
    pairs = [item for key, value in {"spark.sql.shuffle.partitions": str(WRITE_PARTITIONS), **(conf or {})}.items()
             for item in ("--conf", f"{key}={value}")]
    command = rekey_command("backfill", "--source", source, "--target-family", family, "--catalog",
                            str(env.catalog_path), "--master", master, "--report", str(report), *pairs)
    environment = {**os.environ, "REKEY_KAFKA_BOOTSTRAP_SERVERS": env.bootstrap,
                   "REKEY_REGISTRY_URL": env.registry_url}
    with log_file.open("ab") as out:
        return subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def committed_tasks(env: ChaosEnv, source: str, family: str) -> tuple[str | None, dict[int, dict[str, object]]]:
    """The run id of the backfill of `source` into `family` and the markers of its committed write tasks."""
    topic = env.catalog.checkpoint_topic
    run = read_runs(env.kafka_config, topic).get(run_key(source, family).decode())
    if run is None:
        return None, {}
    tasks = read_handoff(env.kafka_config, topic, row_ids=False).tasks
    return run.run_id, {p: tally for (run_id, p), tally in tasks.items() if run_id == run.run_id}


def wait_first_commit(env: ChaosEnv, source: str, family: str, process: subprocess.Popen[bytes],
                      timeout: float = TIMEOUT) -> dict[int, dict[str, object]]:
    """Wait until a write task of the run committed while the job still runs; its committed tasks' markers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the backfill ended (exit {process.returncode}) before the fault could land")
        _run_id, tasks = committed_tasks(env, source, family)
        if tasks:
            return tasks
        time.sleep(0.1)
    raise TimeoutError(f"no write task of the backfill of {source} committed in {timeout:.0f} s")


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry.name)] = (int(stat[stat.rindex(")") + 2:].split()[1]), command)
    return found


# PySpark's daemon, or the one a local rekey session runs instead (`spark_backfill.python_daemon`).
DAEMON_MODULES = ("pyspark.daemon", "spark_backfill.python_daemon")


def _is_daemon(command: str) -> bool:
    return any(module in command for module in DAEMON_MODULES)


def python_workers(root: int) -> list[int]:
    """The PySpark Python workers under `root`: the children of its Python daemon (forked, same command)."""
    processes = _processes()
    daemons = {pid for pid, (parent, command) in processes.items()
               if _is_daemon(command) and not _is_daemon(processes.get(parent, (0, ""))[1])
               and _descends(processes, pid, root)}
    return [pid for pid, (parent, _command) in processes.items() if parent in daemons]


def executor_jvms(driver_port: int) -> list[int]:
    """The executor JVMs of the application whose driver listens on `driver_port` (standalone cluster)."""
    return [pid for pid, (_parent, command) in _processes().items()
            if "CoarseGrainedExecutorBackend" in command and f":{driver_port} " in command]


def _descends(processes: dict[int, tuple[int, str]], pid: int, root: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        pid = processes.get(pid, (0, ""))[0]
    return False


def kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, signal.SIGKILL)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def backfill_kill(env: ChaosEnv, events: int, exactly_once: bool = True, log: Log | None = None,
                  master: str | None = None) -> ChaosResult:
    """The first family the source feeds is backfilled by its own `rekey backfill`, whose write stage is hit
    (Python workers killed in `local[2,4]`, an executor JVM with `master` spark://...), then verified; the others
    are backfilled clean (the manifest check covers them)."""
    plan = TrafficPlan(events, upfront=1.0, chunks=1, pause=0.0)
    cluster = master is not None and master.startswith("spark://")
    with chaos_run(env, "backfill", plan, True, log) as run:
        run.traffic.send_upfront()
        run.traffic.join(run.timeout)
        faulted, *clean = env.catalog.sources[0].feeds
        if _backfill_faulted(env, run, faulted, master or "local[2,4]", cluster):
            _verify(env, run, faulted)
        for family in clean:
            _backfill_clean(env, run, family)
        return run.check()


def _backfill_faulted(env: ChaosEnv, run: ChaosRun, family: str, master: str, cluster: bool) -> bool:
    """`rekey backfill` of `family` with the fault in its write stage; whether it completed."""
    report, log_file = run.workdir / f"backfill-{family}.json", run.workdir / f"backfill-{family}.log"
    driver_port = _free_port()
    process = start_backfill(env, run.source, family, master, report, log_file,
                             {"spark.driver.port": str(driver_port)} if cluster else None)
    try:
        committed = wait_first_commit(env, run.source, family, process)
        victims = executor_jvms(driver_port)[:1] if cluster else python_workers(process.pid)
        name = "kill -9 of an executor JVM" if cluster else f"kill -9 of {len(victims)} Python workers"
        done = sum(int(n) for tally in committed.values() for *_key, n in tally["counts"])  # type: ignore[attr-defined,misc]
        kill(victims)
        run.result.faults.append(Fault(f"{name} in the write stage", time.monotonic() - run.started,
                                       run.traffic.records, done))
        run.log(f"{name} after {len(committed)} of the write tasks committed ({done:,} source records)")
        run.require(bool(victims), f"{family}: no process to kill was found")
        process.wait(TIMEOUT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    run.require(process.returncode == 0, f"{family}: rekey backfill exited {process.returncode} (see {log_file})")
    if process.returncode != 0:
        return False
    summary = json.loads(report.read_text())
    run.log(f"backfilled {family}: {summary['written']:,} records, {summary['keys']:,} keys")
    run.result.notes.append(f"backfilled {family}: {summary['written']:,} records")
    return True


def _session() -> SparkSession:
    from services.devtools.embedded.spark import dev_connector_jars
    from spark_backfill.session import build_session

    return build_session("rekey-chaos-backfill", jars=dev_connector_jars())


def _settings(env: ChaosEnv) -> tuple[KafkaSettings, RegistrySettings]:
    return KafkaSettings(bootstrap_servers=env.bootstrap), RegistrySettings(url=env.registry_url)


def _verify(env: ChaosEnv, run: ChaosRun, family: str) -> None:
    """What `rekey verify` of the faulted family checks, without `--allow-redeliveries`."""
    from spark_backfill.jobs.verify import VerifyRequest, run_verify

    result = run_verify(_session(), VerifyRequest([run.source], [], family, env.catalog_path), *_settings(env))
    (run.workdir / f"verify-{family}.json").write_text(json.dumps(result.to_json(), indent=2))
    run.require(result.ok, f"{family}: the verification (redeliveries not allowed) failed: see "
                           f"{run.workdir / f'verify-{family}.json'}")


def _backfill_clean(env: ChaosEnv, run: ChaosRun, family: str) -> None:
    from spark_backfill.jobs.backfill import BackfillRequest, run_backfill

    report = run_backfill(_session(), BackfillRequest([run.source], family, env.catalog_path), *_settings(env))
    run.log(f"backfilled {family}: {report.written:,} records, {report.keys:,} keys")
    run.result.notes.append(f"backfilled {family}: {report.written:,} records")

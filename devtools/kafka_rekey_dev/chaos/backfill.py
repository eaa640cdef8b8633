"""The `backfill` fault scenario: `rekey backfill` republishes the whole history while faults hit its write stage,
after a first write task committed and while others hold open transactions: kill -9 of the Python workers (the
children of PySpark's daemon); on a standalone cluster (`master` spark://...) that kill of the executors' Python
workers, then, once a later write task committed, kill -9 of an executor JVM whose task has just started.
Spark retries the failed tasks; each retry fences its predecessor's transaction and writes nothing if that one had
committed. The job must complete, the verification of the faulted family must pass without redeliveries allowed,
and the manifest check must find every record of every family once (read_committed), dense and in order. The other
families' backfills and the verification run on the calling process's Spark session (the tests' when there is
one): only the faulted run needs a process of its own to kill.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from kafka_rekey.services.handoff import read_handoff, read_runs, run_key
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey_dev.chaos.harness import ChaosEnv, ChaosResult, ChaosRun, Fault, chaos_run
from kafka_rekey_dev.chaos.traffic import TrafficPlan
from kafka_rekey_dev.embedded.spark import cluster_for, job_environment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Log = Callable[[str], None]
WRITE_PARTITIONS = 16
"""Write tasks of a scenario run: more than its cores, so tasks are still to run when the first commits."""
TIMEOUT = 600.0
PYTHON_WORKER_LOST = "Python worker exited unexpectedly"
TaskFailure = dict[str, object]
"""A failed task's `Task End Reason` in Spark's event log, with its `Task Info`'s `Executor ID` as `Task Executor`."""


def rekey_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "rekey"), *args]


def start_backfill(env: ChaosEnv, source: str, family: str, master: str, report: Path, log_file: Path,
                   conf: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`rekey backfill` in a process group of its own (driver, JVM, Python workers: one kill takes them all), run
    from the log's directory as a user runs it from anywhere; with the Spark UI when `conf` sets its port."""
    conf = {**(conf or {}), "spark.sql.shuffle.partitions": str(WRITE_PARTITIONS)}
    pairs = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
    embedded = cluster_for(master)  # the cluster `rekey spark start` runs: its job properties
    properties = ["--properties-file", str(embedded.write_job_properties())] if embedded else []
    command = rekey_command("backfill", "--source", source, "--target-family", family, "--catalog",
                            str(env.catalog_path), "--master", master, "--report", str(report), *properties, *pairs,
                            *(["--ui"] if "spark.ui.port" in conf else []))
    environment = {**os.environ, **job_environment(), "REKEY_KAFKA_BOOTSTRAP_SERVERS": env.bootstrap,
                   "REKEY_REGISTRY_URL": env.registry_url}
    with log_file.open("ab") as out:
        return subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT,
                                cwd=log_file.parent, start_new_session=True)


def committed_tasks(env: ChaosEnv, source: str, family: str) -> tuple[str | None, dict[int, dict[str, object]]]:
    """The run id of the backfill of `source` into `family` and the markers of its committed write tasks."""
    topic = env.catalog.checkpoint_topic
    run = read_runs(env.kafka_config, topic).get(run_key(source, family).decode())
    if run is None:
        return None, {}
    tasks = read_handoff(env.kafka_config, topic, row_ids=False).tasks
    return run.run_id, {p: tally for (run_id, p), tally in tasks.items() if run_id == run.run_id}


def wait_first_commit(env: ChaosEnv, source: str, family: str, process: subprocess.Popen[bytes],
                      timeout: float = TIMEOUT, beyond: int = 0) -> dict[int, dict[str, object]]:
    """Wait until more than `beyond` write tasks of the run committed while the job still runs; its committed
    tasks' markers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the backfill ended (exit {process.returncode}) before the fault could land")
        _run_id, tasks = committed_tasks(env, source, family)
        if len(tasks) > beyond:
            return tasks
        time.sleep(0.1)
    raise TimeoutError(f"no more than {beyond} write tasks of the backfill of {source} committed in {timeout:.0f} s")


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
DAEMON_MODULES = ("pyspark.daemon", "kafka_rekey.spark_backfill.python_daemon")


def _is_daemon(command: str) -> bool:
    # `-m`: the driver's JVM names the module too, in its `spark.python.daemon.module` setting
    return any(f"-m {module}" in command for module in DAEMON_MODULES)


def python_workers(root: int) -> list[int]:
    """The PySpark Python workers under `root`: the children of its Python daemon (forked, same command)."""
    processes = _processes()
    daemons = {pid for pid, (parent, command) in processes.items()
               if _is_daemon(command) and not _is_daemon(processes.get(parent, (0, ""))[1])
               and _descends(processes, pid, root)}
    return [pid for pid, (parent, _command) in processes.items() if parent in daemons]


def _cpu_ticks(pid: int) -> int | None:
    """The user and system CPU ticks `pid` has used; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def wait_busy_python_worker(roots: list[int], timeout: float = 60.0, every: float = 0.2) -> None:
    """Wait until a Python worker under one of `roots` uses CPU between two looks: one is running a task. In
    `local[n]` the write tasks start and end together, so right after a commit every worker may be between tasks."""
    deadline = time.monotonic() + timeout
    before = {pid: _cpu_ticks(pid) for root in roots for pid in python_workers(root)}
    while time.monotonic() < deadline:
        time.sleep(every)
        now = {pid: _cpu_ticks(pid) for root in roots for pid in python_workers(root)}
        if any(ticks is not None and (was := before.get(pid)) is not None and ticks > was
               for pid, ticks in now.items()):
            return
        before = now
    raise TimeoutError(f"no Python worker under {roots} ran a task within {timeout:.0f} s")


def executor_jvms(driver_port: int) -> dict[str, int]:
    """Executor id -> pid of the executor JVMs of the application whose driver listens on `driver_port`
    (standalone cluster)."""
    found: dict[str, int] = {}
    for pid, (_parent, command) in _processes().items():
        if "CoarseGrainedExecutorBackend" in command and f":{driver_port} " in command:
            found[command.split("--executor-id ", 1)[1].split(" ", 1)[0]] = pid
    return found


def wait_executor_starting_a_task(ui_port: int, timeout: float = 60.0, every: float = 0.1,
                                  within: float = 1.0) -> str:
    """Wait until the driver's REST API shows a task launched less than `within` seconds ago; the id of the
    executor running it. Killed then, the executor fails that task: one that is idle (waiting for locality) or
    finishing its task may fail none."""
    api = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError, IndexError, KeyError):
            app = httpx.get(api, timeout=2.0).json()[0]["id"]
            stages = httpx.get(f"{api}/{app}/stages", params={"status": "active", "details": "true",
                                                              "taskStatus": "RUNNING"}, timeout=2.0).json()
            now = datetime.now(UTC)
            for stage in stages:
                for task in stage.get("tasks", {}).values():
                    launched = datetime.strptime(task["launchTime"], "%Y-%m-%dT%H:%M:%S.%f%Z").replace(tzinfo=UTC)
                    if (now - launched).total_seconds() < within:
                        return str(task["executorId"])
        time.sleep(every)
    raise TimeoutError(f"no write task started on an executor within {timeout:.0f} s")


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
                  master: str | None = None, conf: dict[str, str] | None = None) -> ChaosResult:
    """The first family the source feeds is backfilled by its own `rekey backfill`, whose write stage is hit
    (Python workers killed in `local[2,4]`; with `master` spark://... the executors' Python workers, then an
    executor JVM), then verified; the others are backfilled clean (the manifest check covers them). `conf`: more
    Spark properties of the faulted run (a cluster's `session_conf`, when it is not the one `rekey spark start`
    runs, whose job properties file the run reads)."""
    plan = TrafficPlan(events, upfront=1.0, chunks=1, pause=0.0)
    cluster = master is not None and master.startswith("spark://")
    with chaos_run(env, "backfill", plan, True, log) as run:
        run.traffic.send_upfront()
        run.traffic.join(run.timeout)
        faulted, *clean = env.catalog.sources[0].feeds
        if _backfill_faulted(env, run, faulted, master or "local[2,4]", cluster, conf or {}):
            _verify(env, run, faulted)
        for family in clean:
            _backfill_clean(env, run, family)
        return run.check()


def _backfill_faulted(env: ChaosEnv, run: ChaosRun, family: str, master: str, cluster: bool,
                      conf: dict[str, str]) -> bool:
    """`rekey backfill` of `family` with the faults in its write stage; whether it completed. Each fault must have
    failed a running task, as Spark's event log records it: a fault that hits only idle processes proves nothing."""
    report, log_file = run.workdir / f"backfill-{family}.json", run.workdir / f"backfill-{family}.log"
    events = run.workdir / "spark-events"
    events.mkdir(exist_ok=True)
    conf = {**conf, "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false"}
    driver_port = ui_port = 0  # the cluster's executors and the driver's REST API are looked up on these
    if cluster:
        driver_port, ui_port = _free_port(), _free_port()
        conf |= {"spark.driver.port": str(driver_port), "spark.ui.port": str(ui_port)}
    process = start_backfill(env, run.source, family, master, report, log_file, conf)
    landed: list[tuple[str, Callable[[TaskFailure], bool]]] = []
    try:
        committed = wait_first_commit(env, run.source, family, process)
        roots = list(executor_jvms(driver_port).values()) if cluster else [process.pid]
        wait_busy_python_worker(roots)
        workers = [pid for root in roots for pid in python_workers(root)]
        name = _inject(run, family, f"kill -9 of {len(workers)} Python workers", workers, committed)
        landed.append((name, lambda failure: failure["Reason"] == "ExceptionFailure"
                       and PYTHON_WORKER_LOST in str(failure.get("Description"))))
        if cluster:
            committed = wait_first_commit(env, run.source, family, process, beyond=len(committed))
            executor = wait_executor_starting_a_task(ui_port)
            pid = executor_jvms(driver_port).get(executor)
            name = _inject(run, family, f"kill -9 of an executor JVM (executor {executor})", [pid] if pid else [],
                           committed)
            landed.append((name, lambda failure: failure["Reason"] == "ExecutorLostFailure"
                           and failure["Task Executor"] == executor))
        process.wait(TIMEOUT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    failures = failed_tasks(events)
    for name, failed_by in landed:
        run.require(any(map(failed_by, failures)), f"{family}: the {name} failed no running task (the event log in "
                                                   f"{events} records: {failures or 'no failed task'})")
    run.require(process.returncode == 0, f"{family}: rekey backfill exited {process.returncode} (see {log_file})")
    if process.returncode != 0:
        return False
    summary = json.loads(report.read_text())
    run.log(f"backfilled {family}: {summary['written']:,} records, {summary['keys']:,} keys")
    run.result.notes.append(f"backfilled {family}: {summary['written']:,} records")
    return True


def failed_tasks(events: Path) -> list[TaskFailure]:
    """Why each failed task failed, from the Spark event logs in `events`."""
    failures: list[TaskFailure] = []
    for log in (path for path in events.rglob("*") if path.is_file()):  # rolling logs: one directory per app
        with log.open() as lines:
            for line in lines:
                if '"SparkListenerTaskEnd"' not in line:
                    continue
                event = json.loads(line)
                if event["Task End Reason"]["Reason"] != "Success":
                    failures.append({**event["Task End Reason"], "Task Executor": event["Task Info"]["Executor ID"]})
    return failures


def _inject(run: ChaosRun, family: str, name: str, victims: list[int],
            committed: dict[int, dict[str, object]]) -> str:
    """Kill `victims` in the write stage and record the fault: it is in flight while the committed tasks hold
    fewer source records than were sent. Returns the fault's name."""
    done = sum(int(n) for tally in committed.values() for *_key, n in tally["counts"])  # type: ignore[attr-defined,misc]
    kill(victims)
    run.result.faults.append(Fault(f"{name} in the write stage", time.monotonic() - run.started,
                                   run.traffic.records, done))
    run.log(f"{name} after {len(committed)} of the write tasks committed ({done:,} source records)")
    run.require(bool(victims), f"{family}: no process to kill was found for the {name}")
    return name


def _session() -> SparkSession:
    from kafka_rekey.spark_backfill.session import build_session
    from kafka_rekey_dev.embedded.spark import dev_connector_jars

    return build_session("rekey-chaos-backfill", jars=dev_connector_jars())


def _settings(env: ChaosEnv) -> tuple[KafkaSettings, RegistrySettings]:
    return KafkaSettings(bootstrap_servers=env.bootstrap), RegistrySettings(url=env.registry_url)


def _verify(env: ChaosEnv, run: ChaosRun, family: str) -> None:
    """What `rekey verify` of the faulted family checks, without `--allow-redeliveries`."""
    from kafka_rekey.spark_backfill.jobs.verify import VerifyRequest, run_verify

    result = run_verify(_session(), VerifyRequest([run.source], [], family, env.catalog_path), *_settings(env))
    (run.workdir / f"verify-{family}.json").write_text(json.dumps(result.to_json(), indent=2))
    run.require(result.ok, f"{family}: the verification (redeliveries not allowed) failed: see "
                           f"{run.workdir / f'verify-{family}.json'}")


def _backfill_clean(env: ChaosEnv, run: ChaosRun, family: str) -> None:
    from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill

    report = run_backfill(_session(), BackfillRequest([run.source], family, env.catalog_path), *_settings(env))
    run.log(f"backfilled {family}: {report.written:,} records, {report.keys:,} keys")
    run.result.notes.append(f"backfilled {family}: {report.written:,} records")

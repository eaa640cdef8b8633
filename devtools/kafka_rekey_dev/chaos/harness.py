"""The chaos harness: ACL workers as real processes, traffic, faults with proof they landed mid-stream, drain, check.

A fault counts only if, at the moment it was injected, the ACL group had committed some but not all of the
source records sent so far (0 < committed < sent): records were in flight. A run with a fault that landed
before the first commit or after the backlog was gone is INVALID, never PASSED.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException

from kafka_rekey.services.check.drain import GroupProgress, group_progress, poll_interval, wait_drained
from kafka_rekey.services.check.run import run_check
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.checking import CheckReport
from kafka_rekey_dev.chaos.traffic import Traffic, TrafficPlan
from kafka_rekey_dev.embedded.kafka import KafkaCluster
from kafka_rekey_dev.embedded.workers import ServiceProcess

PASSED, FAILED, INVALID = "PASSED", "FAILED", "INVALID"
PROGRESS_EVERY = 30.0


@dataclass
class ChaosEnv:
    """Where a scenario runs: a broker (or 3-node cluster), a registry and a catalog whose topics exist."""

    bootstrap: str
    registry_url: str
    catalog_path: Path
    catalog: Catalog
    workdir: Path
    cluster: KafkaCluster | None = None
    internal_replication: int = 1

    @property
    def kafka_config(self) -> dict[str, str | int | float | bool]:
        return {"bootstrap.servers": self.bootstrap}


@dataclass
class Fault:
    name: str
    at_seconds: float
    sent: int
    """Source records acknowledged by the broker when the fault was injected."""
    committed: int
    """Source records the ACL group had committed when the fault was injected."""
    recover_seconds: float | None = None
    """From the fault until the group committed progress past the point of the fault again."""
    monotonic: float = 0.0

    @property
    def in_flight(self) -> bool:
        return 0 < self.committed < self.sent

    def describe(self) -> str:
        return f"{self.name} at {self.committed:,}/{self.sent:,} committed/sent"


@dataclass
class ChaosResult:
    scenario: str
    guarantee: str
    events: int
    records_sent: int = 0
    keys: int = 0
    faults: list[Fault] = field(default_factory=list)
    reports: dict[str, CheckReport] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    """Scenario-specific assertions that did not hold (bounds, stop times, expected re-emissions)."""
    notes: list[str] = field(default_factory=list)
    drain_seconds: float = 0.0
    seconds: float = 0.0

    @property
    def exactly_once(self) -> bool:
        return self.guarantee == "exactly_once"

    def total(self, name: str) -> int:
        return sum(len(getattr(r, name)) if isinstance(getattr(r, name), list) else getattr(r, name)
                   for r in self.reports.values())

    @property
    def violations(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for report in self.reports.values():
            for name, count in report.violations(self.exactly_once).items():
                found[name] = found.get(name, 0) + count
        return found

    @property
    def invalid_faults(self) -> list[Fault]:
        return [f for f in self.faults if not f.in_flight]

    @property
    def status(self) -> str:
        if self.violations or self.failures or not self.reports:
            return FAILED
        if not self.faults or self.invalid_faults:
            return INVALID
        return PASSED

    @property
    def recover_seconds(self) -> float | None:
        times = [f.recover_seconds for f in self.faults if f.recover_seconds is not None]
        return max(times) if times else None


class ChaosRun:
    """One scenario run: owns its consumer group (fresh app id), workers, traffic and the recorded faults."""

    def __init__(self, env: ChaosEnv, scenario: str, plan: TrafficPlan, exactly_once: bool = False,
                 internal_partitions: int = 4, state_store: str = "rocksdb",
                 log: Callable[[str], None] | None = None) -> None:
        self.env = env
        self.plan = plan
        self.guarantee = "exactly_once" if exactly_once else "at_least_once"
        self.app_id = f"rekey-chaos-{scenario}-{uuid.uuid4().hex[:8]}"
        self.source = env.catalog.sources[0].name
        self.sequencing = f"{self.app_id}-sequencing"
        self.internal_partitions = internal_partitions
        self.state_store = state_store
        self.workdir = env.workdir / self.app_id
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.traffic = Traffic(env.bootstrap, self.source, plan, self.workdir)
        self.workers: dict[str, ServiceProcess] = {}
        self.result = ChaosResult(scenario, self.guarantee, plan.events)
        self.started = time.monotonic()
        self.log = log or (lambda _message: None)
        self._moment: GroupProgress | None = None
        self._last_progress_line = time.monotonic()

    # -- workers -------------------------------------------------------------------------------------
    def worker_env(self, name: str) -> dict[str, str]:
        return {
            "REKEY_KAFKA_BOOTSTRAP_SERVERS": self.env.bootstrap,
            "REKEY_REGISTRY_URL": self.env.registry_url,
            "REKEY_CATALOG_PATH": str(self.env.catalog_path),
            "REKEY_STATE_STORE": self.state_store,
            "REKEY_DATA_DIR": str(self.workdir / f"state-{name}"),
            "REKEY_APP_ID": self.app_id,
            "REKEY_INTERNAL_PARTITIONS": str(self.internal_partitions),
            "REKEY_INTERNAL_REPLICATION_FACTOR": str(self.env.internal_replication),
            "REKEY_PROCESSING_GUARANTEE": self.guarantee,
        }

    def start_worker(self, name: str = "acl-1", ready_timeout: float = 120.0) -> ServiceProcess:
        worker = ServiceProcess("acl", self.worker_env(name), self.workdir, name=name)
        self.workers[name] = worker
        worker.start(ready_timeout)
        self.log(f"{name} ready on :{worker.port}")
        return worker

    def stop_workers(self) -> None:
        for worker in self.workers.values():
            worker.stop()

    # -- progress ------------------------------------------------------------------------------------
    def progress(self) -> GroupProgress:
        progress = group_progress(self.env.kafka_config, self.app_id, [self.source])
        self._show(progress)
        return progress

    def _show(self, progress: GroupProgress) -> None:
        """A progress line every PROGRESS_EVERY seconds of waiting (a full-scale run drains for tens of minutes)."""
        if time.monotonic() - self._last_progress_line >= PROGRESS_EVERY:
            self._last_progress_line = time.monotonic()
            committed, sent = progress.committed_total(self.source), progress.end_total(self.source)
            line = f"progress: {committed:,}/{sent:,} source records committed/sent"
            if progress.end_total(self.sequencing):  # while draining: the sequence stage's own progress
                line += (f", {progress.committed_total(self.sequencing):,}/{progress.end_total(self.sequencing):,}"
                         " sequencing records committed/sent")
            self.log(f"{line} ({time.monotonic() - self.started:.0f}s)")

    def committed(self) -> int:
        return self.progress().committed_total(self.source)

    def _committed_or_unknown(self) -> int:
        """The committed count, or -1 while a broker fault makes the probe time out (metadata moving)."""
        try:
            return self.committed()
        except KafkaException as error:
            self.log(f"progress probe failed ({error}); retrying")
            return -1

    def wait_committed(self, records: int, timeout: float) -> int:
        """Wait until the group committed at least `records` source records; return the committed count."""
        deadline = time.monotonic() + timeout
        while (committed := self._committed_or_unknown()) < records:
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {self.app_id} committed {committed:,} < {records:,} after {timeout:.0f}s")
            time.sleep(0.25)
        return committed

    def wait_fraction(self, fraction: float, timeout: float | None = None, min_backlog: int = 1) -> int:
        """Wait until the group committed `fraction` of the planned events while at least `min_backlog` records
        are still in flight (sent - committed), the moment to inject a fault; return the committed count.

        A larger `min_backlog` catches a burst near its start, so a fault that takes a moment to set up still
        lands before the worker has committed its way through it; it applies while traffic is still being sent."""
        target = int(self.plan.events * fraction)
        deadline = time.monotonic() + (timeout or self.timeout)
        committed = 0
        while True:
            try:
                progress = self.progress()
                committed, sent = progress.committed_total(self.source), progress.end_total(self.source)
                # Once the traffic is all sent no new burst comes: any moment with records in flight will do
                # (none, for a caller that only waits for progress).
                backlog = min_backlog if sent < self.plan.events else min(1, min_backlog)
                if target <= committed and sent - committed >= backlog:
                    self._moment = progress
                    return committed
            except KafkaException as error:
                self.log(f"progress probe failed ({error}); retrying")
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {self.app_id}: no moment with {target:,} <= committed and "
                                   f"{min_backlog:,} records in flight")
            if target <= committed and not self.traffic.done:
                # Only the backlog is missing: look again right as the next burst arrives. A worker takes a
                # small burst faster than a probe that polls on its own finds a moment in it.
                self.traffic.wait_next_chunk(2 * self.plan.pause)
            else:
                time.sleep(poll_interval(target - committed, near=0.1))

    @property
    def timeout(self) -> float:
        return 180.0 + self.plan.events / 150

    # -- faults --------------------------------------------------------------------------------------
    def inject(self, name: str, action: Callable[[], object], stops_all_commits: bool = False) -> Fault:
        """Inject the fault at once, right after the moment `wait_fraction` found, and keep the record for the
        validity check.

        The fault is judged by that moment: records sent then against records committed then (the probe reads the
        end offsets first, so its committed count is the later one). No second probe comes between the moment and
        the fault: a probe takes long enough for the worker to commit its way through a backlog, and the fault
        would land after it (INVALID at 600/600).

        `stops_all_commits` is for a fault after which the group cannot commit (kill -9 of its only worker): it is
        judged more strictly, by the records sent at the moment against the records committed right after the
        fault. Neither count can be on the wrong side of the fault."""
        moment, self._moment = self._moment, None
        if moment is None:
            raise RuntimeError(f"fault {name!r}: call wait_fraction right before inject, to find the moment")
        fault_at, monotonic = time.monotonic() - self.started, time.monotonic()
        action()
        committed = (self.progress() if stops_all_commits else moment).committed_total(self.source)
        fault = Fault(name, fault_at, moment.end_total(self.source), committed)
        fault.monotonic = monotonic
        self.result.faults.append(fault)
        self.log(f"fault: {fault.describe()}")
        return fault

    def wait_recovered(self, fault: Fault, timeout: float | None = None) -> float:
        """Wait until the group commits past the point of `fault`; record and return the time since the fault."""
        if not fault.in_flight:
            self.log(f"{fault.name} did not land while records were in flight: the run is INVALID")
            return 0.0
        self.wait_committed(fault.committed + 1, timeout or self.timeout)
        fault.recover_seconds = time.monotonic() - fault.monotonic
        self.log(f"recovered from {fault.name} in {fault.recover_seconds:.1f}s")
        return fault.recover_seconds

    # -- end of run ----------------------------------------------------------------------------------
    def drain(self) -> None:
        """Wait until the group has committed every record sent; called after the scenario's last fault."""
        self.traffic.send_rest_unpaced()
        self.traffic.join(self.timeout)
        drained = wait_drained(self.env.kafka_config, self.app_id, [s.name for s in self.env.catalog.sources]
                               + [self.sequencing], self.timeout, on_poll=self._show)
        self.result.drain_seconds = drained.seconds
        self.log(f"drained in {drained.seconds:.1f}s")

    def check(self) -> ChaosResult:
        manifest = self.traffic.manifest()
        self.result.records_sent = self.traffic.records
        kafka = KafkaSettings(bootstrap_servers=self.env.bootstrap)
        registry = RegistrySettings(url=self.env.registry_url)
        for family in self.env.catalog.sources[0].feeds:
            self.result.reports[family] = run_check(kafka, registry, self.env.catalog, family, manifest, self.source)
        self.result.keys = sum(r.keys for r in self.result.reports.values())
        self.result.seconds = time.monotonic() - self.started
        return self.result

    def require(self, condition: bool, failure: str) -> None:
        if not condition:
            self.result.failures.append(failure)


@contextlib.contextmanager
def chaos_run(env: ChaosEnv, scenario: str, plan: TrafficPlan, exactly_once: bool = False,
              log: Callable[[str], None] | None = None, **options: object) -> Iterator[ChaosRun]:
    run = ChaosRun(env, scenario, plan, exactly_once, log=log, **options)  # type: ignore[arg-type]
    try:
        yield run
    except TimeoutError:
        for worker in run.workers.values():  # where a worker that stopped making progress is stuck
            run.log(worker.stacks())
        raise
    finally:
        run.traffic.stop()
        run.stop_workers()

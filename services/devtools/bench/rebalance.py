"""`rekey bench rebalance`: the whole group's events/s, second by second, while the ACL scales out 1 -> 2 -> 3
workers at half of one worker's capacity, with eager (`range`) and incremental (`cooperative-sticky`) assignment.

Each strategy gets a fresh embedded stack and the one-family catalog of `rekey bench acl` (one output per event):
1. capacity: one worker re-keys a backlog of generated events (the first stack's figure sets the paced rate of
   both, so the strategies see the same load);
2. paced: the same generator's events (generated to a file beforehand, so that generating takes no CPU from the
   workers) are sent at half that capacity for four phases; a second worker is started after `phase` seconds, a
   third `phase` seconds after the second was ready; the outputs' end offsets are sampled every second;
3. per scale-out, over the `phase` seconds after the new worker was started: the lowest second's events/s, the
   seconds below half the paced rate, the largest backlog (sent minus re-keyed).
One JSON line of the figures; `--record` writes the section of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from rich.console import Console

from services.devtools.bench.acl import SOURCE, one_family_catalog
from services.devtools.bench.document import replace_section
from services.devtools.demo.stack import DemoStack, demo_stack
from services.devtools.embedded.maven import REPO_ROOT
from services.devtools.embedded.workers import ServiceProcess
from services.generation.writer import generate_to_topic
from services.kafka.producers import make_producer, produce_waiting
from services.settings import KafkaSettings
from shared.generation import GenerationConfig, RecordKind, generate

DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
HEADING = "## Scale-out stall (rekey bench rebalance)"
STRATEGIES = ("range", "cooperative-sticky")
ORGS = 40
WORKERS = 3
SAMPLE_EVERY = 1.0
DRAIN_TIMEOUT = 300.0
_LENGTHS = struct.Struct(">HI")


@dataclass
class ScaleOut:
    workers: int
    """Workers after this scale-out."""
    ready_seconds: float
    """From the new worker's start until it reported ready (assigned, state restored)."""
    lowest_events_per_s: float
    seconds_below_half: int
    peak_backlog: int


@dataclass
class Run:
    strategy: str
    capacity_events_per_s: float
    paced_rate: float
    paced_events: int
    per_second: list[float] = field(default_factory=list)
    """The group's events/s in each second of the paced phase."""
    scale_outs: list[ScaleOut] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)


def _write_events(path: Path, events: int, seed: int) -> int:
    """The generator's events (key and value) to `path`; returns how many valid events are among them."""
    valid = 0
    with path.open("wb") as out:
        config = GenerationConfig(events=events, orgs=ORGS, seed=seed, malformed_rate=0.0, duplicate_rate=0.0)
        for record in generate(config):
            key, value = record.key or b"", record.value or b""
            out.write(_LENGTHS.pack(len(key), len(value)) + key + value)
            valid += record.kind is RecordKind.EVENT
    return valid


def _read_events(path: Path) -> Iterator[tuple[bytes, bytes]]:
    with path.open("rb") as source:
        while header := source.read(_LENGTHS.size):
            key_length, value_length = _LENGTHS.unpack(header)
            yield source.read(key_length), source.read(value_length)


class _Group:
    """The scaled group's outputs and workers on one stack."""

    def __init__(self, stack: DemoStack, catalog: Path, outputs: list[str], strategy: str, exactly_once: bool
                 ) -> None:
        self.stack = stack
        self.admin = AdminClient(stack.kafka_config)
        self.outputs = outputs
        self.env = {**stack.service_env(), "REKEY_CATALOG_PATH": str(catalog), "REKEY_APP_ID": "rekey-bench-rebalance",
                    "REKEY_ASSIGNMENT_STRATEGY": strategy,
                    "REKEY_PROCESSING_GUARANTEE": "exactly_once" if exactly_once else "at_least_once"}
        self.workers: list[ServiceProcess] = []

    def produced(self) -> int:
        request = {TopicPartition(topic, p): OffsetSpec.latest() for topic in self.outputs
                   for p in self.admin.list_topics(topic, timeout=10).topics[topic].partitions}
        answers = self.admin.list_offsets(request, request_timeout=10)
        return sum(future.result().offset for future in answers.values())

    def start_worker(self) -> float:
        """Start one more worker (its own state directory); seconds until it was ready."""
        name = f"acl-{len(self.workers) + 1}"
        worker = ServiceProcess("acl", {**self.env, "REKEY_DATA_DIR": str(self.stack.workdir / f"state-{name}")},
                                self.stack.workdir, name=name)
        self.workers.append(worker)
        started = time.monotonic()
        worker.start(ready_timeout=180.0)
        return time.monotonic() - started

    def wait_produced(self, target: int, timeout: float) -> float:
        """Until `target` outputs exist; the monotonic time they did."""
        deadline = time.monotonic() + timeout
        while (produced := self.produced()) < target:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{produced:,} of {target:,} outputs after {timeout:.0f}s:\n"
                                   + "\n".join(w.log_tail(10) for w in self.workers))
            time.sleep(0.2)
        return time.monotonic()

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


class _Pacer(threading.Thread):
    """Sends the events of a file at a fixed rate; `sent` is how many so far."""

    def __init__(self, kafka: KafkaSettings, path: Path, rate: float) -> None:
        super().__init__(name="bench-pacer", daemon=True)
        self.kafka, self.path, self.rate = kafka, path, rate
        self.sent = 0
        self.finished = float("inf")
        """When the last event was handed to the producer (monotonic)."""
        self.failed: BaseException | None = None

    def run(self) -> None:
        try:
            producer = make_producer(self.kafka, **{"linger.ms": 5})
            started = time.monotonic()
            for index, (key, value) in enumerate(_read_events(self.path)):
                delay = started + index / self.rate - time.monotonic()
                if delay > 0.002:
                    time.sleep(delay)  # the pace itself
                produce_waiting(producer, SOURCE, value, key or None, wait=0.01)
                if index % 200 == 0:
                    producer.poll(0)
                    self.sent = index
            self.finished = time.monotonic()
            producer.flush(60)
            self.sent = index + 1
        except BaseException as error:  # reported by the bench's thread
            self.failed = error


class _Sampler(threading.Thread):
    """The group's outputs every `SAMPLE_EVERY` seconds, with the events sent by then."""

    def __init__(self, group: _Group, pacer: _Pacer) -> None:
        super().__init__(name="bench-sampler", daemon=True)
        self.group, self.pacer = group, pacer
        self.samples: list[tuple[float, int, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.stopped.is_set():
            self.samples.append((time.monotonic(), self.group.produced(), self.pacer.sent))
            next_at += SAMPLE_EVERY
            self.stopped.wait(max(0.0, next_at - time.monotonic()))


def _one_strategy(workdir: Path, strategy: str, backlog: int, events_file: Path, paced: tuple[float, int] | None,
                  phase: float, exactly_once: bool, console: Console) -> Run:
    """`paced`: the paced rate and the valid events in `events_file`, known from the first strategy's run; None:
    this is that run, and it writes the file once it knows its capacity."""
    catalog_path = REPO_ROOT / "catalog" / "topics.yaml"
    with demo_stack(workdir / strategy, catalog_path, console) as stack:
        one_family, family = one_family_catalog(stack.catalog_path, stack.workdir)
        group = _Group(stack, one_family, stack.catalog.family(family).output_topics, strategy, exactly_once)
        kafka = KafkaSettings(bootstrap_servers=stack.bootstrap)
        load_before = os.getloadavg()[0]
        try:
            summary = generate_to_topic(kafka, SOURCE, backlog, ORGS, seed=7, late_rate=0.0)
            with console.status(f"{strategy}: one worker re-keys {summary.events:,} backlog events ..."):
                group.start_worker()
                first = group.wait_produced(1, 120.0)
                done = group.wait_produced(summary.events, DRAIN_TIMEOUT)
            capacity = summary.events / max(done - first, 1e-3)
            console.print(f"[green]✓[/] {strategy}: one worker {capacity:,.0f} events/s")
            if paced is None:
                paced_rate = capacity / 2
                events = int(paced_rate * phase * (WORKERS + 1))  # a phase more: the joining workers' start-up
                with console.status(f"generating {events:,} paced events ..."):
                    paced_events = _write_events(events_file, events, seed=8)
            else:
                paced_rate, paced_events = paced
            base = group.produced()
            pacer = _Pacer(kafka, events_file, paced_rate)
            sampler = _Sampler(group, pacer)
            pacer.start()
            sampler.start()
            starts: list[tuple[float, float]] = []
            with console.status(f"{strategy}: {paced_rate:,.0f} events/s, scaling 1 -> 2 -> 3 ..."):
                for _ in range(WORKERS - 1):
                    sampler.stopped.wait(phase)  # the length of a phase
                    started = time.monotonic()
                    starts.append((started, group.start_worker()))
                pacer.join(paced_events / paced_rate + DRAIN_TIMEOUT)
                if pacer.failed is not None:
                    raise RuntimeError(f"the pacer failed: {pacer.failed}")
                group.wait_produced(base + paced_events, DRAIN_TIMEOUT)
            sampler.stopped.set()
            sampler.join()
        finally:
            group.stop()
        run = Run(strategy, round(capacity), paced_rate, paced_events,
                  load=(load_before, os.getloadavg()[0]))
        samples = sampler.samples
        run.per_second = [round((b[1] - a[1]) / (b[0] - a[0])) for a, b in itertools.pairwise(samples)]
        for number, (started, ready) in enumerate(starts, start=2):
            window = [(a, b) for a, b in itertools.pairwise(samples)
                      if started <= a[0] < started + phase and b[0] <= pacer.finished]
            rates = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in window]
            backlogs = [b[2] - (b[1] - base) for _a, b in window]
            run.scale_outs.append(ScaleOut(number, round(ready, 1), round(min(rates, default=0.0)),
                                           sum(r < paced_rate / 2 for r in rates), max(backlogs, default=0)))
        return run


def run_bench(backlog: int, phase: float, exactly_once: bool, workdir: Path, record: bool, console: Console
              ) -> list[Run]:
    load = os.getloadavg()
    console.print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    workdir.mkdir(parents=True, exist_ok=True)
    events_file = workdir / "paced-events.bin"
    runs: list[Run] = []
    for strategy in STRATEGIES:
        paced = (runs[0].paced_rate, runs[0].paced_events) if runs else None
        runs.append(_one_strategy(workdir, strategy, backlog, events_file, paced, phase, exactly_once, console))
    guarantee = "exactly_once" if exactly_once else "at_least_once"
    print(json.dumps({"bench": "rebalance", "guarantee": guarantee, "phase_seconds": phase,
                      "load": [round(x, 2) for x in load], "runs": [asdict(r) for r in runs]}))
    for run in runs:
        console.print(f"{run.strategy}: capacity {run.capacity_events_per_s:,.0f}/s, paced {run.paced_rate:,.0f}/s; "
                      + "; ".join(f"-> {s.workers}: lowest {s.lowest_events_per_s:,.0f}/s, {s.seconds_below_half} s "
                                  f"below half, backlog {s.peak_backlog:,}" for s in run.scale_outs))
    if record:
        replace_section(DOC, HEADING, _markdown(runs, backlog, phase, guarantee, load))
        console.print(f"recorded in {DOC}")
    return runs


def _markdown(runs: list[Run], backlog: int, phase: float, guarantee: str, load: tuple[float, float, float]) -> str:
    lines = [
        HEADING, "",
        f"`rekey bench rebalance --backlog {backlog} --phase {phase:g}` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} "
        f"UTC, {guarantee}: the one-family ACL on a fresh embedded stack per strategy, one worker's backlog "
        f"capacity measured, then the same generated events sent at half the first stack's capacity; a second "
        f"worker started after {phase:g} s, a third {phase:g} s after the second was ready; load average at the "
        f"start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min), 2 cores shared with other work (3 "
        f"workers, the broker, the registry and the sender on them, other engineers' runs around it). Per "
        f"scale-out, over the {phase:g} s after the new worker was started.", "",
        "| assignment | 1 worker events/s | paced events/s | scale-out | ready s | lowest second, events/s | "
        "seconds below half | peak backlog, events |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        for scale in run.scale_outs:
            lines.append(f"| {run.strategy} | {run.capacity_events_per_s:,.0f} | {run.paced_rate:,.0f} | "
                         f"{scale.workers - 1} -> {scale.workers} | {scale.ready_seconds:.1f} | "
                         f"{scale.lowest_events_per_s:,.0f} | {scale.seconds_below_half} | {scale.peak_backlog:,} |")
    lines += ["", "Events/s of the whole group, each second of the paced phase and of the drain after it:", ""]
    lines += [f"- {run.strategy}: {', '.join(f'{r:,}' for r in run.per_second)}" for run in runs]
    return "\n".join(lines) + "\n"

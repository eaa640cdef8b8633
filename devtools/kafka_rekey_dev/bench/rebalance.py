"""`rekey bench rebalance`: the scale-out stall, the whole group's events/s while the ACL scales out 1 -> 2 -> 3
workers at half of what one worker sustains, with eager (`range`) and incremental (`cooperative-sticky`)
assignment.

Each strategy gets a fresh embedded stack and the one-family catalog of `rekey bench acl` (one output per event):
1. backlog: one worker re-keys a backlog of generated events (its capacity without a sender, for reference; it
   also warms the broker up);
2. calibration (first stack only): paced warm-ups of the one worker, from half that capacity down to a rate it
   keeps up with while the sender runs on the same cores; half of that is the paced rate of both strategies, so
   the one worker keeps up before the first scale-out with room to spare;
3. paced: the events of a file (generated beforehand, so that generating takes no CPU from the workers) are sent
   at the paced rate for four phases; a second worker is started after `phase` seconds, a third `phase` seconds
   after the second was ready;
4. read back: every output's CreateTime and its source record's, for the group's events/s over windows of
   `WINDOW` seconds (a worker writes its outputs in bursts, so single seconds read 0 with no rebalance at all)
   and each event's end-to-end latency.
Per scale-out: the events/s in the window before the new worker started and from its start until it was ready,
the seconds (whole windows) below half the paced rate over the `phase` seconds after its start, and the largest
end-to-end latency of the events sent in them. One JSON line; `--record` writes the section of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import os
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from rich.console import Console

from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.kafka.producers import make_producer, produce_waiting
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.generation import GenerationConfig, RecordKind, generate
from kafka_rekey_dev.bench.acl import SOURCE, one_family_catalog
from kafka_rekey_dev.bench.document import replace_section
from kafka_rekey_dev.demo.stack import DemoStack, demo_stack
from kafka_rekey_dev.embedded.maven import REPO_ROOT
from kafka_rekey_dev.embedded.workers import ServiceProcess

DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
HEADING = "## Scale-out stall (rekey bench rebalance)"
STRATEGIES = ("range", "cooperative-sticky")
ORGS = 40
WORKERS = 3
WINDOW = 3.0
CALIBRATION_SECONDS = 12.0
CALIBRATION_STEPS = 3
KEPT_UP = 0.9
"""A warm-up rate is sustained when the sender reached this share of it and the worker this share of the sender."""
DRAIN_TIMEOUT = 300.0
_LENGTHS = struct.Struct(">HI")
Ranges = dict[tuple[str, int], tuple[int, int]]


@dataclass
class ScaleOut:
    workers: int
    """Workers after this scale-out."""
    ready_seconds: float
    """From the new worker's start until it reported ready (assigned, state restored)."""
    before_events_per_s: float
    """The group's rate over the `WINDOW` seconds before the new worker started."""
    during_events_per_s: float
    """The group's rate from the new worker's start until it was ready."""
    lowest_window_events_per_s: float
    seconds_below_half: float
    max_latency_ms: float
    """Of the events sent within `phase` seconds of the new worker's start."""


@dataclass
class Run:
    strategy: str
    capacity_events_per_s: float
    """One worker on a backlog, no sender running."""
    paced_rate: float
    paced_events: int
    windows: list[float] = field(default_factory=list)
    """The group's events/s in each `WINDOW` of the paced phase and its drain."""
    scale_outs: list[ScaleOut] = field(default_factory=list)
    before_max_latency_ms: float = 0.0
    """Of the events sent before the first scale-out."""
    load: tuple[float, float] = (0.0, 0.0)


@dataclass
class Calibration:
    sustained_events_per_s: float
    """The paced warm-up's rate one worker kept up with, the sender running."""
    paced_rate: float
    paced_events: int
    steps: list[tuple[int, int, int]] = field(default_factory=list)
    """Each warm-up's events/s asked, sent and re-keyed."""


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

    def ends(self, topics: list[str]) -> dict[tuple[str, int], int]:
        request = {TopicPartition(topic, p): OffsetSpec.latest() for topic in topics
                   for p in self.admin.list_topics(topic, timeout=10).topics[topic].partitions}
        answers = self.admin.list_offsets(request, request_timeout=10)
        return {(tp.topic, tp.partition): future.result().offset for tp, future in answers.items()}

    def produced(self) -> int:
        return sum(self.ends(self.outputs).values())

    def start_worker(self) -> tuple[float, float]:
        """Start one more worker (its own state directory); the wall-clock times it was started and was ready."""
        name = f"acl-{len(self.workers) + 1}"
        worker = ServiceProcess("acl", {**self.env, "REKEY_DATA_DIR": str(self.stack.workdir / f"state-{name}")},
                                self.stack.workdir, name=name)
        self.workers.append(worker)
        started = time.time()
        worker.start(ready_timeout=180.0)
        return started, time.time()

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
    """Sends up to `limit` events of a file at a fixed rate; `sent` is how many so far."""

    def __init__(self, kafka: KafkaSettings, path: Path, rate: float, limit: int) -> None:
        super().__init__(name="bench-pacer", daemon=True)
        self.kafka, self.path, self.rate, self.limit = kafka, path, rate, limit
        self.sent = 0
        self.failed: BaseException | None = None

    def run(self) -> None:
        try:
            producer = make_producer(self.kafka, **{"linger.ms": 5})
            started = time.monotonic()
            for index, (key, value) in enumerate(_read_events(self.path)):
                if index == self.limit:
                    break
                delay = started + index / self.rate - time.monotonic()
                if delay > 0.002:
                    time.sleep(delay)  # the pace itself
                produce_waiting(producer, SOURCE, value, key or None, wait=0.01)
                if index % 200 == 0:
                    producer.poll(0)
                    self.sent = index
            producer.flush(60)
            self.sent = min(self.limit, index + 1)
        except BaseException as error:  # reported by the bench's thread
            self.failed = error

    def finish(self) -> int:
        """Wait until everything is sent; how many events were."""
        self.join(self.limit / self.rate + DRAIN_TIMEOUT)
        if self.failed is not None or self.is_alive():
            raise RuntimeError(f"the pacer failed: {self.failed or 'still sending'}")
        return self.sent


def _calibrate(group: _Group, kafka: KafkaSettings, capacity: float, workdir: Path, phase: float,
               console: Console) -> Calibration:
    """A paced warm-up of one worker, from half its backlog capacity down until it keeps up with the sender running
    (the sender takes CPU from the worker on the same cores); then the paced phase's events at half that rate."""
    rate, steps = capacity / 2, []
    for step in range(CALIBRATION_STEPS):
        sent_rate, output_rate = _paced_warm_up(group, kafka, rate, workdir, step, console)
        steps.append((round(rate), round(sent_rate), round(output_rate)))
        console.print(f"calibration: asked {rate:,.0f}/s, sent {sent_rate:,.0f}/s, re-keyed {output_rate:,.0f}/s")
        if sent_rate >= rate * KEPT_UP and output_rate >= sent_rate * KEPT_UP:
            break
        rate = min(sent_rate, output_rate) * KEPT_UP
    paced_rate = rate / 2
    paced_path = workdir / "paced-events.bin"
    events = int(paced_rate * phase * (WORKERS + 1))  # a phase more: the joining workers' start-up
    with console.status(f"generating {events:,} paced events ..."):
        paced_events = _write_events(paced_path, events, seed=8)
    console.print(f"[green]✓[/] one worker sustains {rate:,.0f} events/s with the sender running: paced at "
                  f"{paced_rate:,.0f}/s")
    return Calibration(round(rate), paced_rate, paced_events, steps)


def _paced_warm_up(group: _Group, kafka: KafkaSettings, rate: float, workdir: Path, step: int, console: Console
                   ) -> tuple[float, float]:
    """Send at `rate` for `CALIBRATION_SECONDS` to the group and wait until it re-keyed everything; the rates
    sent and re-keyed after the first third (the group's start)."""
    path = workdir / f"calibration-{step}.bin"
    events = int(rate * CALIBRATION_SECONDS)
    with console.status(f"generating {events:,} calibration events ..."):
        valid = _write_events(path, events, seed=9 + step)
    base = group.produced()
    pacer = _Pacer(kafka, path, rate, events)
    with console.status(f"calibrating: sending {rate:,.0f} events/s to one worker ..."):
        pacer.start()
        time.sleep(CALIBRATION_SECONDS / 3)  # the calibration's own pace
        first, sent_first, at_first = group.produced(), pacer.sent, time.monotonic()
        while pacer.is_alive() and pacer.sent < events * 0.95:
            time.sleep(0.2)
        last, sent_last, at_last = group.produced(), pacer.sent, time.monotonic()
        pacer.finish()
        group.wait_produced(base + valid, DRAIN_TIMEOUT)
    seconds = max(at_last - at_first, 1e-3)
    return (sent_last - sent_first) / seconds, (last - first) / seconds


def _read(bootstrap: str, ranges: Ranges) -> Iterator[object]:
    """Every record in [start, end) of each partition."""
    wanted = {tp: span for tp, span in ranges.items() if span[1] > span[0]}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-rebalance-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(t, p, start) for (t, p), (start, _) in wanted.items()])
        remaining = {tp: end for tp, (_, end) in wanted.items()}
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading back {len(remaining)} partitions timed out")
            for message in consumer.consume(10_000, 1.0):
                tp = (message.topic(), message.partition())
                end = remaining.get(tp)
                if end is None:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF and message.offset() >= end:
                        del remaining[tp]
                    continue
                if message.offset() < end:
                    yield message
                if message.offset() >= end - 1:
                    del remaining[tp]
    finally:
        consumer.close()


def _timestamps(bootstrap: str, sources: Ranges, outputs: Ranges) -> tuple[list[int], list[tuple[int, int]]]:
    """The outputs' CreateTimes (ms, sorted), and (source CreateTime, latency ms) of each output."""
    sent = {f"{m.topic()}/{m.partition()}/{m.offset()}": m.timestamp()[1]  # type: ignore[attr-defined]
            for m in _read(bootstrap, sources)}
    created: list[int] = []
    latencies: list[tuple[int, int]] = []
    for message in _read(bootstrap, outputs):
        stamp = message.timestamp()[1]  # type: ignore[attr-defined]
        created.append(stamp)
        source = dict(message.headers() or []).get("src")  # type: ignore[attr-defined]
        if source is not None and (at := sent.get(source.decode())) is not None:
            latencies.append((at, stamp - at))
    return sorted(created), sorted(latencies)


def windows(created_ms: list[int], start: float, end: float, window: float = WINDOW) -> list[float]:
    """Events/s in consecutive windows of `window` seconds from `start` until `end` (epoch seconds), from the
    sorted output CreateTimes."""
    rates = []
    at = start
    while at + window <= end + 1e-9:
        rates.append(_rate(created_ms, at, at + window))
        at += window
    return rates


def _rate(created_ms: list[int], start: float, end: float) -> float:
    count = bisect.bisect_left(created_ms, end * 1000) - bisect.bisect_left(created_ms, start * 1000)
    return count / (end - start) if end > start else 0.0


def max_latency(latencies: list[tuple[int, int]], start: float, end: float) -> float:
    """The largest latency (ms) of the events sent in [start, end) (epoch seconds)."""
    low = bisect.bisect_left(latencies, (int(start * 1000), -2**62))
    high = bisect.bisect_left(latencies, (int(end * 1000), -2**62))
    return float(max((latency for _sent, latency in latencies[low:high]), default=0))


def scale_out(workers: int, started: float, ready: float, created_ms: list[int], latencies: list[tuple[int, int]],
              paced_rate: float, phase: float) -> ScaleOut:
    """One scale-out's figures (the module doc); times in epoch seconds."""
    after = windows(created_ms, started, started + phase)
    return ScaleOut(
        workers, round(ready - started, 1), round(_rate(created_ms, started - WINDOW, started)),
        round(_rate(created_ms, started, ready)), round(min(after, default=0.0)),
        sum(WINDOW for rate in after if rate < paced_rate / 2), max_latency(latencies, started, started + phase))


def _one_strategy(workdir: Path, strategy: str, backlog: int, calibration: Calibration | None, phase: float,
                  exactly_once: bool, console: Console) -> tuple[Run, Calibration]:
    """`calibration`: the paced rate and events, known from the first strategy's run; None: this is that run."""
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
            console.print(f"[green]✓[/] {strategy}: one worker {capacity:,.0f} events/s on a backlog")
            if calibration is None:
                calibration = _calibrate(group, kafka, capacity, workdir, phase, console)
            rate, events = calibration.paced_rate, calibration.paced_events
            sources, outputs = group.ends([SOURCE]), group.ends(group.outputs)
            pacer = _Pacer(kafka, workdir / "paced-events.bin", rate, events)
            paced_from = time.time()
            pacer.start()
            starts: list[tuple[float, float]] = []
            with console.status(f"{strategy}: {rate:,.0f} events/s, scaling 1 -> 2 -> 3 ..."):
                for _ in range(WORKERS - 1):
                    time.sleep(phase)  # the length of a phase
                    starts.append(group.start_worker())
                pacer.finish()
                group.wait_produced(sum(outputs.values()) + events, DRAIN_TIMEOUT)
            drained = time.time()
            load_after = os.getloadavg()[0]
        finally:
            group.stop()
        with console.status(f"{strategy}: reading back the paced phase's timestamps ..."):
            created, latencies = _timestamps(
                stack.bootstrap, {tp: (start, end) for tp, end in group.ends([SOURCE]).items()
                                  if (start := sources.get(tp, 0)) < end},
                {tp: (outputs.get(tp, 0), end) for tp, end in group.ends(group.outputs).items()})
        run = Run(strategy, round(capacity), round(rate), events, windows(created, paced_from, drained),
                  load=(load_before, load_after),
                  before_max_latency_ms=max_latency(latencies, paced_from, starts[0][0]))
        run.scale_outs = [scale_out(number, started, ready, created, latencies, rate, phase)
                          for number, (started, ready) in enumerate(starts, start=2)]
        return run, calibration


def run_bench(backlog: int, phase: float, exactly_once: bool, workdir: Path, record: bool, console: Console
              ) -> list[Run]:
    load = os.getloadavg()
    console.print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    workdir.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    calibration: Calibration | None = None
    for strategy in STRATEGIES:
        run, calibration = _one_strategy(workdir, strategy, backlog, calibration, phase, exactly_once, console)
        runs.append(run)
    assert calibration is not None
    guarantee = "exactly_once" if exactly_once else "at_least_once"
    print(json.dumps({"bench": "rebalance", "guarantee": guarantee, "phase_seconds": phase, "window_seconds": WINDOW,
                      "load": [round(x, 2) for x in load], "calibration": asdict(calibration),
                      "runs": [asdict(r) for r in runs]}))
    for run in runs:
        console.print(f"{run.strategy}: paced {run.paced_rate:,.0f}/s; " + "; ".join(
            f"-> {s.workers}: {s.before_events_per_s:,.0f}/s before, {s.during_events_per_s:,.0f}/s until ready "
            f"({s.ready_seconds:.1f} s), {s.seconds_below_half:g} s below half, max latency "
            f"{s.max_latency_ms:,.0f} ms" for s in run.scale_outs))
    if record:
        replace_section(DOC, HEADING, _markdown(runs, calibration, backlog, phase, guarantee))
        console.print(f"recorded in {DOC}")
    return runs


def _markdown(runs: list[Run], calibration: Calibration, backlog: int, phase: float, guarantee: str) -> str:
    lines = [
        HEADING, "",
        f"`rekey bench rebalance --backlog {backlog} --phase {phase:g}` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} "
        f"UTC, {guarantee}: the one-family ACL on a fresh embedded stack per strategy, 3 workers, the broker, the "
        f"registry and the sender on 2 cores. One worker kept up with a paced warm-up at "
        f"{calibration.sustained_events_per_s:,} events/s with the sender running (warm-ups asked / sent / "
        f"re-keyed: {'; '.join(f'{a:,} / {b:,} / {c:,}' for a, b, c in calibration.steps)}); the paced rate is "
        f"half of that, "
        f"{calibration.paced_rate:,.0f} events/s, for both strategies. A second worker was started after "
        f"{phase:g} s, a third {phase:g} s after the second was ready. Rates from the outputs' CreateTimes over "
        f"windows of {WINDOW:g} s; per scale-out: the window before the new worker's start, from its start until "
        f"it was ready, and over the {phase:g} s after its start the windows below half the paced rate and the "
        f"largest end-to-end latency (output CreateTime - source CreateTime) of the events sent in them.", "",
        "| assignment | load 1m start / end | 1 worker, backlog events/s | scale-out | ready s | events/s before | "
        "events/s until ready | lowest window | seconds below half | max latency ms (before the first: ms) |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        for scale in run.scale_outs:
            lines.append(
                f"| {run.strategy} | {run.load[0]:.2f} / {run.load[1]:.2f} | {run.capacity_events_per_s:,.0f} | "
                f"{scale.workers - 1} -> {scale.workers} | {scale.ready_seconds:.1f} | "
                f"{scale.before_events_per_s:,.0f} | {scale.during_events_per_s:,.0f} | "
                f"{scale.lowest_window_events_per_s:,.0f} | {scale.seconds_below_half:g} | "
                f"{scale.max_latency_ms:,.0f} ({run.before_max_latency_ms:,.0f}) |")
    lines += ["", f"Events/s of the whole group, each {WINDOW:g} s window of the paced phase and its drain:", ""]
    lines += [f"- {run.strategy}: {', '.join(f'{r:,.0f}' for r in run.windows)}" for run in runs]
    return "\n".join(lines) + "\n"

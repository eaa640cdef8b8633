"""`rekey bench acl`: throughput and latency of the live ACL next to two baselines, on the embedded stack.

Each pipeline gets its own source topic holding the same N generated events (same seed) and runs alone:

1. backlog: start the worker on the pre-filled topic; events/s = N / (last output CreateTime - first consume),
   first consume from the worker's `rekey_consumed_total` polled every 0.2 s (the passthrough stamps it itself);
2. paced: produce M more events at a fixed rate (a share of the ACL's backlog rate, the same for every pipeline)
   while the worker runs; latency = output record CreateTime - source record CreateTime, p50/p99, and the p99 of the
   records created from its 10th second on (the steady state, after what the backlog left behind);
3. peak RSS = VmHWM of the worker process;
4. CPU per backlog event: user + system seconds of the worker's processes and of the stack's broker over the
   backlog, divided by its events (what the machine's other load moves least; the broker shares the 2 cores).

Pipelines: `rekey run acl` (RocksDB state) with the bench source feeding one family, the same on the Debezium
changes of the demo catalog's CDC source (`rekey_debezium`), then both families of the demo catalog, then one
family under exactly-once; `kafka_streams` and `kafka_streams_exactly_once` (a one-thread Kafka Streams app doing
the one-family ACL's work, each next to its rekey row, on the same events); `passthrough` (confluent-kafka consume
-> translate + route -> produce, the ceiling) and `faust group_by` (plain faust re-key, no sequencing; needs the
`bench` extra).
A warm-up run of the 1-family ACL (backlog and a paced phase three rows' long, events of its own) goes first and is
not reported: the broker's JVM is new with the stack and compiles as it goes (each row says how much CPU its JIT
still took in the paced phase); before any exactly-once row, a second one under exactly-once (the broker's
transaction paths). The run ends with `shared` translate + route per
event in this process, then one JSON line of the figures.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.console import make_console
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.kafka.producers import make_producer, produce_waiting
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.generation import GenerationConfig, RecordKind, generate
from kafka_rekey.shared.routing import route_in
from kafka_rekey.shared.translation import DomainEventDraft, SourceFormat, SourceRecord, compiled
from kafka_rekey_dev.bench import quix_env
from kafka_rekey_dev.bench.kafka_streams.app import AT_LEAST_ONCE, EXACTLY_ONCE, AclStreamsApp
from kafka_rekey_dev.bench.restore import cold_restore
from kafka_rekey_dev.demo.stack import DemoStack, demo_stack
from kafka_rekey_dev.embedded.errors import NotReady
from kafka_rekey_dev.embedded.maven import REPO_ROOT
from kafka_rekey_dev.embedded.processes import terminate_with_parent
from kafka_rekey_dev.embedded.workers import ServiceProcess

BENCH_DIR = REPO_ROOT / "var" / "bench-acl"
CATALOG = REPO_ROOT / "catalog" / "topics.yaml"
DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
SECTION = "## ACL (rekey bench acl)"
START, END = "<!-- bench-acl:start -->", "<!-- bench-acl:end -->"
POLL = 0.2
STALL = 180.0
SOURCE = "genesys.conversations.raw"
CDC_SOURCE = "crm.public.interactions"
ORGS = 40
STATE_KEYS = 1_000_000
WARMUP = "warmup"
WARMUP_EVENTS = 200_000
WARMUP_PACED_ROUNDS = 3
"""The warm-up's paced phase lasts this many rows' paced phases: the broker's JIT compiled through one of them and
on into the first measured row's, taking CPU from the worker it measured (docs/BENCHMARKS.md)."""
WARMUP_EXACTLY_ONCE = "warmup_exactly_once"
EXACTLY_ONCE_ROWS = ("rekey_exactly_once", "kafka_streams_exactly_once")
"""The rows a second, exactly-once warm-up goes before: the first transactional row otherwise paid for the broker's
JIT of its transaction paths (docs/BENCHMARKS.md)."""
STEADY_AFTER_MS = 10_000
"""The steady-state latency is that of the records created this long after the paced phase began."""
JIT_THREADS = re.compile(r"C\d CompilerThre")
"""HotSpot's JIT compiler threads, as Linux names them (15 characters of `C2 CompilerThread0`)."""


@dataclass
class Result:
    id: str
    name: str
    events: int
    seconds: float
    outputs: int
    paced_events: int = 0
    paced_rate: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    steady_latencies_ms: list[float] = field(default_factory=list)
    """Of the records created `STEADY_AFTER_MS` or later into the paced phase."""
    broker_jit_seconds: float | None = None
    """CPU seconds of the broker's JIT compiler threads over the paced phase."""
    peak_rss_mb: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    cpu_us_per_event: float | None = None
    broker_cpu_us_per_event: float | None = None
    extra: dict[str, float] = field(default_factory=dict)
    """Figures of the pipeline's own (`_Pipeline.after`) for the JSON line."""

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds

    def percentile(self, q: float, steady: bool = False) -> float | None:
        latencies = self.steady_latencies_ms if steady else self.latencies_ms
        if not latencies:
            return None
        ordered = sorted(latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Worker(ServiceProcess):
    """A bench worker: `python -m MODULE ARGS` (faust baseline, passthrough) or `rekey run acl`."""

    def __init__(self, name: str, env: dict[str, str], log_dir: Path, argv: list[str] | None,
                 http: bool = True, stamp: Path | None = None, args: tuple[str, ...] = ()) -> None:
        """`argv`: a baseline's command; None runs `rekey run acl ARGS`."""
        super().__init__("acl", env, log_dir, name=name, args=args)
        self.argv = argv
        self.http = http
        self.stamp = stamp

    def start(self, ready_timeout: float = 180.0) -> _Worker:
        if self.argv is None:
            super().start(ready_timeout)
            return self
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv, env=self.env, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=terminate_with_parent,
            )
        deadline = time.monotonic() + ready_timeout
        while not self._ready():
            if time.monotonic() > deadline:
                raise NotReady(f"{self.name} not ready in {ready_timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.5)
        return self

    def _ready(self) -> bool:
        if not self.http:
            if self.process is None or self.process.poll() is not None:
                raise NotReady(f"{self.name} exited:\n{self.log_tail()}")
            return True
        return super()._ready()

    def first_consume(self) -> float | None:
        """Wall-clock time of the first consumed record if known exactly (the passthrough stamps it)."""
        if self.stamp is not None and self.stamp.exists() and self.stamp.read_text():
            return float(self.stamp.read_text())
        return None

    def consumed(self) -> float:
        if not self.http:
            return 1.0 if self.first_consume() is not None else 0.0
        try:
            return self.metric("rekey_consumed_total")
        except httpx.HTTPError:
            return 0.0

    def pids(self) -> list[int]:
        return [] if self.process is None else [self.process.pid]

    def peak_rss_mb(self) -> float:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(match.group(1)) / 1024 if match else 0.0

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None


class _StageWorkers:
    """The ACL's two stages as two workers of one group (`rekey run acl --stage translate|sequence`), as the Helm
    chart deploys them: not the one-process pipeline the targets are set for, but the shape that puts a second
    core to work (one Python process uses one). Its peak RSS is the sum of both workers' peaks."""

    def __init__(self, name: str, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        # The sequence stage first: ready, it waits for the translate stage's records, whose first consume then
        # starts the clock as a single worker's does.
        self.stages = [_Worker(f"{name}-{stage}", env, log_dir, None, args=("--stage", stage))
                       for stage in ("sequence", "translate")]
        self.translate = self.stages[1]

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The translate stage's (the busier one's, profiled with `--profile`)."""
        return self.translate.process

    @property
    def log_path(self) -> Path:
        return self.translate.log_path

    def start(self) -> _StageWorkers:
        for stage in self.stages:
            stage.start()
        return self

    def first_consume(self) -> float | None:
        return None

    def consumed(self) -> float:
        return self.translate.consumed()

    def pids(self) -> list[int]:
        return [pid for stage in self.stages for pid in stage.pids()]

    def peak_rss_mb(self) -> float:
        return sum(stage.peak_rss_mb() for stage in self.stages)

    def exited(self) -> bool:
        return any(stage.exited() for stage in self.stages)

    def log_tail(self) -> str:
        return "\n".join(stage.log_tail() for stage in self.stages)

    def stop(self) -> None:
        for stage in self.stages:
            stage.stop()


@dataclass
class _Pipeline:
    id: str
    name: str
    source: str
    outputs: list[str]
    worker: Callable[[], _Worker | _StageWorkers]
    families: int
    seed: int = 42
    """Of the generated events; the rekey pipelines share one group and its dedupe memory, so each needs its own
    event ids (the same seed would make every event of a later run an upstream duplicate)."""
    events: int | None = None
    """Backlog events when not the run's `--events`."""
    paced: bool = True
    paced_rounds: int = 1
    """The paced phase's length in the run's paced phases."""
    source_format: SourceFormat = SourceFormat.CCAAS_JSON
    """How the generated events are written: contact-centre JSON, or Debezium changes as its connector writes them."""
    after: Callable[[Result], dict[str, float]] | None = None
    """Measured once the worker stopped (the cold restore); its figures join the JSON line."""


class Bench:
    def __init__(self, stack: DemoStack, console: Console, events: int, paced_seconds: float,
                 paced_fraction: float, profile_seconds: float = 0.0) -> None:
        self.profile_seconds = profile_seconds
        self.stack = stack
        self.console = console
        self.events = events
        self.paced_seconds = paced_seconds
        self.paced_fraction = paced_fraction
        self.kafka = KafkaSettings(bootstrap_servers=stack.bootstrap)
        self.admin = AdminClient(stack.kafka_config)
        self.hot = tuple(dict.fromkeys(org for family in stack.catalog.families.values()
                                       for org in (*family.high_volume_orgs, *family.dedicated)))
        self.consumer = Consumer({**self.kafka.librdkafka(), "group.id": "rekey-bench-reader",
                                  "enable.auto.commit": False, "enable.partition.eof": True})

    # ---------------------------------------------------------------- topics and offsets
    def create_topics(self, names: list[str], partitions: int) -> None:
        futures = self.admin.create_topics([NewTopic(n, partitions, 1, config={"compression.type": "lz4"})
                                            for n in names])
        for future in futures.values():
            future.result(30)

    def partitions(self, topic: str) -> list[TopicPartition]:
        metadata = self.admin.list_topics(topic, timeout=10).topics[topic]
        return [TopicPartition(topic, p) for p in sorted(metadata.partitions)]

    def end_offsets(self, topics: list[str]) -> dict[tuple[str, int], int]:
        request = {tp: OffsetSpec.latest() for topic in topics for tp in self.partitions(topic)}
        answers = self.admin.list_offsets(request, request_timeout=10)
        return {(tp.topic, tp.partition): future.result().offset for tp, future in answers.items()}

    def _read(self, ranges: dict[tuple[str, int], tuple[int, int]]) -> Iterator[object]:
        """Every record in [start, end) of each partition."""
        wanted = {tp: (start, end) for tp, (start, end) in ranges.items() if end > start}
        if not wanted:
            return
        self.consumer.assign([TopicPartition(t, p, start) for (t, p), (start, _) in wanted.items()])
        remaining = {tp: end for tp, (_, end) in wanted.items()}
        deadline = time.monotonic() + 300
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading back {len(remaining)} partitions timed out")
            for message in self.consumer.consume(10_000, 1.0):
                tp = (message.topic(), message.partition())
                end = remaining.get(tp)
                if end is None:
                    continue
                if message.error() is not None:  # the partition's end: past `end` when a transaction marker ends it
                    if message.error().code() == KafkaError._PARTITION_EOF and message.offset() >= end:
                        del remaining[tp]
                    continue
                if message.offset() >= end:
                    continue
                yield message
                if message.offset() >= end - 1:
                    del remaining[tp]
        self.consumer.unassign()

    def last_create_time(self, ends: dict[tuple[str, int], int]) -> float:
        # The last few records: under exactly-once the last offset is a transaction marker, not a record.
        ranges = {tp: (max(0, end - 10), end) for tp, end in ends.items() if end > 0}
        return max(message.timestamp()[1] for message in self._read(ranges)) / 1000  # type: ignore[attr-defined]

    # ---------------------------------------------------------------- phases
    def fill(self, topic: str, seed: int, events: int, source_format: SourceFormat) -> int:
        """`events` records, the valid events among them returned (the rest: the tombstones after CDC deletes)."""
        with self._bar(f"generating {events:,} events into {topic}", events) as update:
            summary = generate_to_topic(self.kafka, topic, events, ORGS, hot_orgs=self.hot, seed=seed,
                                        progress=update, source_format=source_format)
        assert summary.events + summary.tombstones == summary.records, "the bench sends valid events only"
        return summary.events

    def paced(self, topic: str, events: int, rate: float, seed: int, source_format: SourceFormat) -> int:
        """Send `events` records at `rate`; return the valid events among them (the rest: CDC tombstones)."""
        config = GenerationConfig(events=events, orgs=ORGS, hot_orgs=self.hot, seed=seed,
                                  source_format=source_format)
        producer = make_producer(self.kafka, **{"linger.ms": 5})
        # Generated beforehand: on a small machine the generator would take CPU from the worker it measures.
        with self.console.status(f"generating {events:,} paced events ..."):
            records = list(generate(config))
        # Closed when done: a producer left to the collector outlives the stack and logs its broker's stop.
        with self._bar(f"paced: {events:,} events at {rate:,.0f}/s into {topic}", events) as update, \
                contextlib.closing(producer):
            started = time.monotonic()
            for record in records:
                delay = started + record.index / rate - time.monotonic()
                if delay > 0.002:
                    time.sleep(delay)
                produce_waiting(producer, topic, record.value, record.key, wait=0.01)
                if record.index % 200 == 0:
                    producer.poll(0)
                    update(record.index)
            producer.flush(60)
            update(events)
        return sum(record.kind is RecordKind.EVENT for record in records)

    @contextlib.contextmanager
    def _bar(self, what: str, total: int) -> Iterator[Callable[[int], None]]:
        with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=self.console, transient=True) as bar:
            task = bar.add_task(what, total=total)
            yield lambda done: bar.update(task, completed=done)

    def wait_outputs(self, worker: _Worker | _StageWorkers, outputs: list[str], base: dict[tuple[str, int], int],
                     target: int, what: str, first_seen: list[float] | None = None) -> dict[tuple[str, int], int]:
        """Poll every 0.2 s until `target` records were produced past `base`; note the first consume time.

        Gives up when nothing was produced for STALL seconds (a slow machine is fine, a stuck worker is not)."""
        last_zero = time.time()
        progress, progressed = -1, time.monotonic()
        with self._bar(f"{worker.name}: {what}", target) as update:
            while True:
                if first_seen is not None and not first_seen:
                    exact = worker.first_consume()
                    if exact is not None:
                        first_seen.append(exact)
                    elif worker.consumed() > 0:
                        first_seen.append((last_zero + time.time()) / 2)  # between the two polls
                    else:
                        last_zero = time.time()
                ends = self.end_offsets(outputs)
                done = sum(ends.values()) - sum(base.get(tp, 0) for tp in ends)
                update(min(done, target))
                if done >= target:
                    return ends
                if worker.exited():
                    raise RuntimeError(f"{worker.name} exited:\n{worker.log_tail()}")
                if done > progress:
                    progress, progressed = done, time.monotonic()
                elif time.monotonic() - progressed > STALL:
                    raise TimeoutError(f"{worker.name}: stuck at {done} of {target} records for {STALL:.0f}s:\n"
                                       f"{worker.log_tail()}")
                time.sleep(POLL)

    def latencies(self, source: str, source_range: dict[tuple[str, int], tuple[int, int]],
                  output_range: dict[tuple[str, int], tuple[int, int]],
                  source_format: SourceFormat) -> list[tuple[int, float]]:
        """(source CreateTime, latency ms) of every output of the paced phase."""
        by_position: dict[str, int] = {}
        by_event: dict[str, int] = {}
        for message in self._read(source_range):
            stamp = message.timestamp()[1]  # type: ignore[attr-defined]
            by_position[f"{message.topic()}/{message.partition()}/{message.offset()}"] = stamp  # type: ignore
            if source_format is SourceFormat.CCAAS_JSON:  # the baselines' outputs name their event, not its position
                by_event[json.loads(message.value())["eventId"]] = stamp  # type: ignore[attr-defined]
        result: list[tuple[int, float]] = []
        for message in self._read(output_range):
            headers = dict(message.headers() or [])  # type: ignore[attr-defined]
            if "src" in headers:
                created = by_position.get(headers["src"].decode())
            else:
                created = by_event.get(json.loads(message.value())["eventId"])  # type: ignore[attr-defined]
            if created is not None:
                result.append((created, float(message.timestamp()[1] - created)))  # type: ignore[attr-defined]
        return sorted(result)

    def _profile(self, worker: _Worker | _StageWorkers) -> subprocess.Popen[bytes]:
        """py-spy (raw folded stacks, non-blocking, waits included) on the worker for the first seconds of the
        backlog: a loop waiting for records or for the producer shows as such, not as a shorter profile."""
        assert worker.process is not None
        out = worker.log_path.with_suffix(".py-spy.txt")
        self.console.print(f"profiling {worker.name} for {self.profile_seconds:.0f}s into {out}")
        return subprocess.Popen(
            [str(Path(sys.executable).with_name("py-spy")), "record", "--nonblocking", "--idle", "-d",
             str(int(self.profile_seconds)), "-f", "raw", "-o", str(out), "-p", str(worker.process.pid)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

    def run(self, pipeline: _Pipeline, paced_rate: float | None) -> Result:
        """Backlog then paced phase of one pipeline; `paced_rate` None = a share of this pipeline's own rate."""
        load_before = os.getloadavg()[0]
        events = self.fill(pipeline.source, pipeline.seed, pipeline.events or self.events, pipeline.source_format)
        worker = pipeline.worker()
        base = self.end_offsets(pipeline.outputs)  # before the start: a worker may produce before it reads ready
        with self.console.status(f"starting {pipeline.name} ..."):
            worker.start()
        profiler = self._profile(worker) if self.profile_seconds else None
        try:
            first: list[float] = []
            brokers = _broker_pids(self.stack.workdir)
            worker_cpu, broker_cpu = _cpu_seconds(worker.pids()), _cpu_seconds(brokers)
            ends = self.wait_outputs(worker, pipeline.outputs, base, events * pipeline.families,
                                     "backlog re-keyed", first)
            worker_cpu, broker_cpu = _cpu_seconds(worker.pids()) - worker_cpu, _cpu_seconds(brokers) - broker_cpu
            seconds = self.last_create_time(ends) - first[0]
            if seconds <= 0:
                raise RuntimeError(f"{pipeline.name}: its last output is stamped {-seconds:.2f}s before its first "
                                   f"consume: it does not stamp outputs with the time it produces them")
            result = Result(pipeline.id, pipeline.name, events, seconds, sum(ends.values()) - sum(base.values()),
                            cpu_us_per_event=worker_cpu / events * 1e6,
                            broker_cpu_us_per_event=broker_cpu / events * 1e6 if brokers else None)
            self.console.print(f"[green]✓[/] {pipeline.name}: {events:,} events in {seconds:.2f}s = "
                               f"{result.events_per_second:,.0f} events/s, CPU {result.cpu_us_per_event:.0f} us/event "
                               f"(broker {result.broker_cpu_us_per_event or 0:.0f}) (load {os.getloadavg()[0]:.2f})")
            if pipeline.paced:
                rate = paced_rate if paced_rate is not None else result.events_per_second * self.paced_fraction
                paced_records = max(1, int(rate * self.paced_seconds * pipeline.paced_rounds))
                source_before = self.end_offsets([pipeline.source])
                jit = _cpu_seconds(brokers, JIT_THREADS)
                paced_events = self.paced(pipeline.source, paced_records, rate, pipeline.seed + 1_000,
                                          pipeline.source_format)
                source_after = self.end_offsets([pipeline.source])
                final = self.wait_outputs(worker, pipeline.outputs, ends, paced_events * pipeline.families,
                                          "paced events re-keyed")
                result.paced_events, result.paced_rate = paced_events, rate
                result.broker_jit_seconds = _cpu_seconds(brokers, JIT_THREADS) - jit if brokers else None
            result.peak_rss_mb = worker.peak_rss_mb()
            result.load = (load_before, os.getloadavg()[0])
        finally:
            with self.console.status(f"stopping {pipeline.name} ..."):
                if profiler is not None:
                    profiler.wait(self.profile_seconds + 60)
                worker.stop()
        if pipeline.after is not None:
            result.extra = pipeline.after(result)
        if not pipeline.paced:
            self.console.print(f"[green]✓[/] {pipeline.name}: peak RSS {result.peak_rss_mb:,.0f} MB")
            return result
        with self.console.status("reading back timestamps for latency ..."):
            samples = self.latencies(
                pipeline.source,
                {tp: (source_before.get(tp, 0), end) for tp, end in source_after.items()},
                {tp: (ends.get(tp, 0), end) for tp, end in final.items()},
                pipeline.source_format,
            )
            result.latencies_ms = [latency for _created, latency in samples]
            steady_from = samples[0][0] + STEADY_AFTER_MS if samples else 0
            result.steady_latencies_ms = [latency for created, latency in samples if created >= steady_from]
            timeline = self.stack.workdir / f"{pipeline.id}-latency.csv"
            timeline.write_text("source_create_time_ms,latency_ms\n" + "".join(f"{c},{v:.0f}\n" for c, v in samples))
        self.console.print(f"[green]✓[/] {pipeline.name}: paced {paced_events:,} at {rate:,.0f}/s, latency p50 "
                           f"{result.percentile(0.5)} ms p99 {result.percentile(0.99)} ms (from "
                           f"{STEADY_AFTER_MS / 1000:.0f} s on: {result.percentile(0.99, steady=True)} ms), broker JIT "
                           f"{result.broker_jit_seconds or 0:.1f} CPU s, peak RSS {result.peak_rss_mb:,.0f} MB")
        return result


def _cpu_seconds(pids: list[int], threads: re.Pattern[str] | None = None) -> float:
    """User + system CPU seconds of the processes `pids` (all their threads, or those whose name `threads` matches)
    so far; 0 for one that is gone."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        stats = [Path(f"/proc/{pid}/stat")] if threads is None else list(Path(f"/proc/{pid}/task").glob("*/stat"))
        for path in stats:
            try:
                stat = path.read_text()
            except OSError:
                continue
            if threads is not None and not threads.match(stat[stat.index("(") + 1:stat.rindex(")")]):
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _broker_pids(workdir: Path) -> list[int]:
    """The stack's Kafka broker processes: the JVMs whose command line names the stack's directory."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"kafka.Kafka" in command and str(workdir).encode() in command:
                pids.append(int(entry.name))
    return pids


def one_family_catalog(catalog_path: Path, workdir: Path) -> tuple[Path, str]:
    """A copy of the catalog whose bench source feeds only its first family; returns (path, that family)."""
    document = yaml.safe_load(catalog_path.read_text())
    source = next(s for s in document["sources"] if s["name"] == SOURCE)
    source["feeds"] = source["feeds"][:1]
    path = workdir / "catalog-one-family.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path, source["feeds"][0]


def _cdc_family(catalog: Catalog) -> str:
    """The family the catalog's CDC source feeds (the bench's CDC row writes one)."""
    return next(source.feeds[0] for source in catalog.sources if source.name == CDC_SOURCE)


def _pipelines(stack: DemoStack, workdir: Path) -> list[_Pipeline]:
    domain = [topic for family in stack.catalog.families.values() for topic in family.output_topics]
    one_family_path, first_family = one_family_catalog(stack.catalog_path, workdir)
    first_outputs = stack.catalog.family(first_family).output_topics
    common = {**stack.service_env(), "REKEY_STATE_STORE": "rocksdb", "REKEY_PROCESSING_GUARANTEE": "at_least_once"}
    one_family = {**common, "REKEY_CATALOG_PATH": str(one_family_path)}
    python = sys.executable
    stamp = workdir / "passthrough.first-consume"

    def rekey_env(env: dict[str, str]) -> dict[str, str]:
        # One consumer group for every rekey pipeline: they share the source topic, and each run must start
        # where the previous one stopped (its own backlog only).
        return {**env, "REKEY_APP_ID": "rekey-bench-acl", "REKEY_DATA_DIR": str(workdir / "state")}

    def rekey(name: str, env: dict[str, str]) -> Callable[[], _Worker]:
        return lambda: _Worker(name, rekey_env(env), workdir, None)

    def kafka_streams(row: str, guarantee: str) -> _Pipeline:
        # A fresh JVM per row, as rekey's worker is a fresh process: both are measured from their first consume.
        stamp = workdir / f"{row}.first-consume"
        app = AclStreamsApp(stack.bootstrap, f"bench.{row}.source", f"bench.{row}.out", f"rekey-bench-{row}",
                            workdir / f"{row}-state", stamp, guarantee)
        name = "Kafka Streams, 1 family, 1 stream thread" + (", exactly-once" if guarantee == EXACTLY_ONCE else "")
        return _Pipeline(row, name, app.source, [app.output], lambda: _Worker(
            row.replace("_", "-"), common, workdir, app.command(stack.registry_url), http=False, stamp=stamp), 1)

    pipelines = [
        # Not reported: the broker's JVM starts with the stack and compiles its hot paths as they come (C2 took
        # half a core in the first pipeline's backlog, and a broker thread a whole core for the first 10 s of its
        # paced phase), so whichever pipeline ran first measured that too. Both phases, like a pipeline's.
        _Pipeline(WARMUP, "warm-up (rekey ACL, 1 family; not reported)", SOURCE, first_outputs,
                  rekey("warm-up", one_family), 1, seed=41, events=WARMUP_EVENTS, paced_rounds=WARMUP_PACED_ROUNDS),
        _Pipeline(WARMUP_EXACTLY_ONCE, "warm-up (rekey ACL, 1 family, exactly-once; not reported)", SOURCE,
                  first_outputs, rekey("warm-up-exactly-once", {**one_family, "REKEY_PROCESSING_GUARANTEE":
                                                                "exactly_once"}), 1, seed=49, events=WARMUP_EVENTS),
        _Pipeline("rekey_1_family", "rekey ACL, 1 family", SOURCE, first_outputs, rekey("one-family", one_family), 1,
                  seed=42),
        kafka_streams("kafka_streams", AT_LEAST_ONCE),
        # The same work on the Debezium changes of a CRM table, as the connector writes them through the JSON
        # converter (a schema block in every record): the CDC path's cost per event next to the event stream's.
        _Pipeline("rekey_debezium", "rekey ACL, 1 family, Debezium CDC (JSON with schemas)", CDC_SOURCE,
                  stack.catalog.family(_cdc_family(stack.catalog)).output_topics, rekey("debezium", one_family), 1,
                  seed=47, source_format=SourceFormat.DEBEZIUM),
        _Pipeline("rekey_2_families", "rekey ACL, 2 families", SOURCE, domain, rekey("two-families", common), 2,
                  seed=43),
        _Pipeline("rekey_exactly_once", "rekey ACL, 1 family, exactly-once", SOURCE, first_outputs,
                  rekey("exactly-once", {**one_family, "REKEY_PROCESSING_GUARANTEE": "exactly_once"}), 1, seed=44),
        kafka_streams("kafka_streams_exactly_once", EXACTLY_ONCE),
        _Pipeline("rekey_stage_workers", "rekey ACL, 1 family, 2 workers (one per stage)", SOURCE, first_outputs,
                  lambda: _StageWorkers("stage-workers", rekey_env(one_family), workdir), 1, seed=46),
        # Its state holds a dedupe entry per event and a sequence per key: at least STATE_KEYS keys, more when
        # the runs before it left theirs.
        _Pipeline("rekey_state_1m", "rekey ACL, 1 family, 1,000,000+ state keys", SOURCE, first_outputs,
                  rekey("state-1m", one_family), 1, seed=45, events=STATE_KEYS, paced=False),
        # Last of the rekey rows: its cold start deletes the state they share.
        _Pipeline("restore", "rekey ACL, 1 family, 1,000,000+ state keys, then a cold restore", SOURCE,
                  first_outputs, rekey("restore", one_family), 1, seed=48, events=STATE_KEYS, paced=False,
                  after=lambda built: cold_restore(rekey("restore-cold", one_family), workdir / "state",
                                                   built.peak_rss_mb,
                                                   sorted((workdir / "kafka").glob("node-*/data")), make_console())),
        _Pipeline("passthrough", "(a) passthrough, 2 families", "bench.passthrough.source", ["bench.passthrough.out"],
                  lambda: _Worker(
            "passthrough", common, workdir,
            [python, "-m", "kafka_rekey_dev.bench.passthrough", "bench.passthrough.source", "bench.passthrough.out",
             "rekey-bench-passthrough", str(stamp)], http=False, stamp=stamp), 2),
    ]
    quix_python, why_not = quix_env.quix_python()
    if quix_python is None:
        make_console().print(f"Quix Streams baseline skipped: {why_not}")
    else:
        quix_stamp = workdir / "quix.first-consume"
        pipelines.append(_Pipeline(
            "quix_group_by", "(c) Quix Streams group_by + per-key sequence, 1 family", "bench.quix.source",
            ["bench.quix.out"], lambda: _Worker(
                "quix-group-by", common, workdir,
                [str(quix_python), str(Path(quix_env.__file__).with_name("quix_group_by.py")), stack.bootstrap,
                 "bench.quix.source", "bench.quix.out", "rekey-bench-quix", str(workdir / "quix-state"),
                 str(quix_stamp)], http=False, stamp=quix_stamp), 1))
    if importlib.util.find_spec("faust") is None:
        make_console().print("faust group_by baseline skipped: faust is not installed "
                             "(pip install -e './devtools[bench]')", markup=False)
    else:
        pipelines.append(_Pipeline(
            "faust_group_by", "(b) faust group_by, 2 families", "bench.faust.source", ["bench.faust.out"],
            lambda: _Worker("faust-group-by", {**common, "REKEY_APP_ID": "rekey-bench-faust-group-by",
                                               "REKEY_STATE_STORE": "memory",
                                               "REKEY_BENCH_SOURCE": "bench.faust.source",
                                               "REKEY_BENCH_OUTPUT": "bench.faust.out"},
                            workdir, [python, "-m", "kafka_rekey_dev.bench.faust_group_by"]), 2))
    return pipelines


def translate_route_micro_us(catalog: Catalog, source_format: SourceFormat = SourceFormat.CCAAS_JSON,
                             events: int = 20_000, repeats: int = 5) -> float:
    """`shared` translate + route per event (one family), in microseconds, in this process: the generated events
    as they are (`ccaas-json`), or each wrapped as Genesys Cloud delivers it through EventBridge. The best of
    `repeats` passes, as `timeit` advises: what is slower than that is other processes' time, not the code's."""
    source = next(s for s in catalog.sources if s.name == SOURCE)
    config = GenerationConfig(events=events, orgs=ORGS, seed=3)
    values = [r.value for r in generate(config)]
    if source_format is SourceFormat.GENESYS_EVENTBRIDGE:
        values = [_as_eventbridge(value) for value in values]
    records = [SourceRecord(SOURCE, 0, offset, None, value) for offset, value in enumerate(values)]
    translate = compiled(source.translation if source_format is SourceFormat.CCAAS_JSON else source_format)
    table, version = catalog.family_table(source.feeds[0]), catalog.version  # as the live pipeline keeps them
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for record in records:
            outcome = translate(record)
            if isinstance(outcome, DomainEventDraft):
                route_in(table, version, outcome.org_id, outcome.interaction_id)
        best = min(best, time.perf_counter() - started)
    return best / len(records) * 1e6


def translate_route_figures(console: Console) -> dict[SourceFormat, float]:
    """`translate_route_micro_us` of both shapes, measured as the live worker runs them: in a process whose
    start-up objects are frozen out of the garbage collector's way (`gc.freeze`, as `Worker.run` does), with a
    small heap (measured after a benchmark's runs, a pass took twice as long: the collector walked their data)."""
    gc.collect()
    gc.freeze()
    catalog = load_catalog(CATALOG)
    figures = {shape: translate_route_micro_us(catalog, shape)
               for shape in (SourceFormat.CCAAS_JSON, SourceFormat.GENESYS_EVENTBRIDGE)}
    for shape, micros in figures.items():
        console.print(f"shared translate + route, {shape}: {micros:.2f} us per event (target <= 10)")
    return figures


def _as_eventbridge(value: bytes | None) -> bytes | None:
    """A generated event in the envelope of Genesys' published EventBridge example (customer-start): the envelope's
    times ISO-8601, the detail event's `eventTime` epoch milliseconds, as Genesys writes them."""
    try:
        event = json.loads(value or b"")
    except ValueError:
        return value  # the generator's malformed records stay malformed
    if not isinstance(event, dict):
        return value
    conversation = event.get("interactionId")
    return json.dumps({
        "version": "0", "id": event.get("eventId"), "detail-type": "v2.detail.events.conversation.{id}.customer.start",
        "source": f"aws.partner/genesys.com/cloud/{event.get('orgId')}/bench-bus", "account": "123456789012",
        "time": event.get("timestamp"), "region": "us-east-1", "resources": [],
        "detail": {"topicName": f"v2.detail.events.conversation.{conversation}.customer.start", "version": "2",
                   "eventBody": {"eventTime": _epoch_ms(event.get("timestamp")), "conversationId": conversation,
                                 "mediaType": event.get("interactionType"), "direction": "INBOUND",
                                 **(event.get("data") or {})},
                   "metadata": {"CorrelationId": event.get("eventId")}, "timestamp": event.get("timestamp")},
    }).encode()


def _epoch_ms(timestamp: object) -> object:
    try:
        return round(dt.datetime.fromisoformat(str(timestamp)).timestamp() * 1000)
    except ValueError:
        return timestamp  # the generator's bad timestamps stay bad


def render(results: list[Result]) -> Table:
    ceiling = next((r.events_per_second for r in results if r.id == "passthrough"), float("nan"))
    faust = next((r.events_per_second for r in results if r.id == "faust_group_by"), float("nan"))
    quix = next((r.events_per_second for r in results if r.id == "quix_group_by"), float("nan"))
    table = Table(title="rekey bench acl: one worker per pipeline")
    for column in ("pipeline", "events/s", "x ceiling", "x faust", "x quix", "CPU us/event (broker)", "paced rate",
                   "p50", "p99", "p99 from 10 s", "peak RSS", "load 1m"):
        table.add_column(column, justify="left" if column == "pipeline" else "right")
    for r in results:
        p50, p99, steady = r.percentile(0.5), r.percentile(0.99), r.percentile(0.99, steady=True)
        table.add_row(
            r.name, f"{r.events_per_second:,.0f}", f"{r.events_per_second / ceiling:.2f}",
            f"{r.events_per_second / faust:.2f}", f"{r.events_per_second / quix:.2f}",
            "-" if r.cpu_us_per_event is None else f"{r.cpu_us_per_event:.0f} ({r.broker_cpu_us_per_event or 0:.0f})",
            f"{r.paced_rate:,.0f}/s",
            "-" if p50 is None else f"{p50:,.0f} ms", "-" if p99 is None else f"{p99:,.0f} ms",
            "-" if steady is None else f"{steady:,.0f} ms",
            f"{r.peak_rss_mb:,.0f} MB", f"{r.load[0]:.2f}/{r.load[1]:.2f}",
        )
    return table


def figures(results: list[Result], translate_route_us: dict[SourceFormat, float]) -> dict[str, object]:
    """The run's headline figures, printed as the last line (one JSON object)."""
    rates = {r.id: round(r.events_per_second) for r in results}
    main = next((r for r in results if r.id == "rekey_1_family"), None)
    p99 = None if main is None else main.percentile(0.99)
    cdc = rates.get("rekey_debezium")
    p99s = {r.id: r.percentile(0.99) for r in results}
    cpu = {r.id: r.cpu_us_per_event for r in results}
    cdc_cpu, main_cpu = cpu.get("rekey_debezium"), cpu.get("rekey_1_family")
    return {**rates, "debezium_vs_1_family": None if cdc is None or main is None else round(
        cdc / main.events_per_second, 2),
        "debezium_vs_1_family_cpu": None if not cdc_cpu or not main_cpu else round(main_cpu / cdc_cpu, 2),
        "cpu_us_per_event": {row: round(us, 1) for row, us in cpu.items() if us is not None},
        "broker_cpu_us_per_event": {r.id: round(r.broker_cpu_us_per_event, 1) for r in results
                                    if r.broker_cpu_us_per_event is not None},
        "p99_ms": p99, "exactly_once_p99_ms": p99s.get("rekey_exactly_once"),
        "kafka_streams_p99_ms": p99s.get("kafka_streams"),
        "kafka_streams_exactly_once_p99_ms": p99s.get("kafka_streams_exactly_once"),
        "passthrough_p99_ms": p99s.get("passthrough"),
        "steady_p99_ms": {r.id: r.percentile(0.99, steady=True) for r in results if r.steady_latencies_ms},
        "broker_jit_cpu_s": {r.id: round(r.broker_jit_seconds, 1) for r in results if r.broker_jit_seconds is not None},
        "rss_mb": next((round(r.peak_rss_mb) for r in results if r.id == "rekey_state_1m"), None),
        **{name: value for r in results for name, value in r.extra.items()},
        "translate_route_us": round(translate_route_us[SourceFormat.CCAAS_JSON], 2),
        "translate_route_us_eventbridge": round(translate_route_us[SourceFormat.GENESYS_EVENTBRIDGE], 2)}


def markdown(table: Table) -> str:
    headers = [str(c.header) for c in table.columns]
    rows = list(zip(*[list(c.cells) for c in table.columns], strict=True))
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def record(table: Table, command: str, events: int, paced_seconds: float, load: tuple[float, float, float],
           doc: Path = DOC) -> None:
    """Write the figures between this section's markers; text after the markers (analysis) is kept."""
    today = dt.date.today().isoformat()
    block = "\n".join([
        START,
        f"Measured {today} with `{command}` ({events:,} backlog events per pipeline, then a paced phase of "
        f"{paced_seconds:.0f} s). Machine: {platform.machine()}, {os.cpu_count()} cores, nothing else "
        f"running, Python {platform.python_version()}; load average at the start "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min), per pipeline in the last column.",
        "",
        markdown(table),
        END,
    ])
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if SECTION in text:
        head, rest = text.split(SECTION, 1)
        following = re.search(r"^## ", rest, flags=re.M)
        body, tail = (rest[:following.start()], rest[following.start():]) if following else (rest, "")
        if START in body and END in body:
            before, after = body.split(START, 1)[0], body.split(END, 1)[1]
            body = before + block + after
        else:
            body = "\n\n" + block + "\n" + body.lstrip("\n")
        text = head + SECTION + body.rstrip("\n") + "\n" + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + SECTION + "\n\n" + block + "\n"
    doc.write_text(text)


def run_bench(events: int, paced_seconds: float, paced_fraction: float, workdir: Path = BENCH_DIR,
              write_doc: bool = True, command: str = "rekey bench acl", only: tuple[str, ...] = (),
              profile_seconds: float = 0.0) -> list[Result]:
    # In a log file a table must not wrap at the 80 columns rich assumes without a terminal.
    console = make_console()
    load = os.getloadavg()
    console.print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    translate_route_us = translate_route_figures(console)  # first: before the stack and the runs fill the heap
    with demo_stack(workdir, CATALOG, console) as stack:
        bench = Bench(stack, console, events, paced_seconds, paced_fraction, profile_seconds)
        streams_rows = ["kafka_streams", "kafka_streams_exactly_once"]
        bench.create_topics(["bench.passthrough.source", "bench.faust.source", "bench.quix.source",
                             *(f"bench.{row}.source" for row in streams_rows)], 6)
        bench.create_topics(["bench.passthrough.out", "bench.faust.out", "bench.quix.out",
                             *(f"bench.{row}.out" for row in streams_rows)], 8)
        results: list[Result] = []
        rate: float | None = None
        warmups = (WARMUP, WARMUP_EXACTLY_ONCE) if not only or set(only) & set(EXACTLY_ONCE_ROWS) else (WARMUP,)
        for pipeline in _pipelines(stack, workdir):
            warmup = pipeline.id in (WARMUP, WARMUP_EXACTLY_ONCE)
            if (warmup and pipeline.id not in warmups) or (not warmup and only and pipeline.id not in only):
                continue
            result = bench.run(pipeline, rate)
            if not warmup:
                results.append(result)
                rate = results[0].paced_rate
        bench.consumer.close()
        # librdkafka's admin handle has no close: released while its broker still runs, it logs nothing as it stops.
        del bench
    table = render(results)
    console.print(table)
    if write_doc and not only and not profile_seconds:
        record(table, command, events, paced_seconds, load)
        console.print(f"[green]✓[/] recorded in {DOC.relative_to(REPO_ROOT)}")
    print(json.dumps(figures(results, translate_route_us)))
    return results

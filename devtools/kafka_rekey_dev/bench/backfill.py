"""`rekey bench backfill`: the Spark backfill vs a single-process confluent-kafka copy of the same topic, and the
live ACL's cost per record on the same records.

Both copies do the same work on the same generated source topic, in the same run: read the snapshot, translate +
route with `shared`, number every key densely in source order (`assign_sequences` / the Spark window), encode
Avro in the wire format, produce with explicit Java-parity partitions and `seq`/`src` headers. Each writes into
its own copy of the family's topics (isolated catalog copies). Figures are source records per second of wall
time; the Spark figure excludes the SparkSession start (reported separately). CPU is counted per source record
over the whole process tree (this process, the driver JVM, its Python workers, and the children they reaped),
from /proc, for the Spark job; for the single process, this process's own CPU (the idle JVM is left out).

Then `rekey run acl` (at-least-once, RocksDB state) reads the same source topic from its start in a consumer group
of its own, into its own copy of the family's topics: the backfill's topics would hold its hand-off, from which
the ACL would resume after the history instead of re-keying it. Its seconds run from its readiness (its first
output, if that came earlier) to its last output; the CPU of its process tree, from its readiness until its group
has committed past every record.
"""

from __future__ import annotations

import json
import os
import re
import resource
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.spark_backfill.extract import snapshot, watermarks
from kafka_rekey_dev.bench.document import replace_section
from kafka_rekey_dev.bench.scale import ScaleOutcome, process_tree, run_at_scale
from kafka_rekey_dev.embedded.maven import REPO_ROOT

SECTION = "## Backfill: Spark vs single-process copy"
TARGET_RATIO = 1.2
TARGET_CPU_TO_ACL = 1.5
ACL_MIN_RECORDS_PER_S = 1_000
"""Below this pace the live ACL's run is given up as stuck."""
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REPO_CATALOG = REPO_ROOT / "catalog" / "topics.yaml"


def tree_cpu_seconds(root: int | None = None) -> float:
    """User + system CPU seconds of `root` (this process) and every descendant, plus what they reaped."""
    ticks = 0
    for pid in process_tree(root or os.getpid()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue  # exited meanwhile
        fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces
        ticks += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / _CLOCK_TICKS


def _isolated(text: str, uid: str) -> str:
    """The catalog with every topic renamed uniquely (`x_v2` -> `x_<uid>_v2`, sources `s` -> `s.<uid>`)."""
    import yaml

    data = yaml.safe_load(text)
    names = [s["name"] for s in data.get("sources", [])] + [t["name"] for t in data.get("topics", [])]
    renamed = {n: (re.sub(r"_(v\d+)$", rf"_{uid}_\1", n) if re.search(r"_v\d+$", n) else f"{n}.{uid}") for n in names}
    pattern = re.compile("|".join(re.escape(n) for n in sorted(renamed, key=len, reverse=True)))
    return pattern.sub(lambda m: renamed[m.group(0)], text)


@dataclass(frozen=True)
class AclRun:
    """The live ACL over every record of a source topic."""

    records: int
    seconds: float
    """From its readiness (its first output, if that came earlier) to its last output."""
    cpu_seconds: float
    """Of its process tree, from its readiness until its group had committed past every record."""
    written: int
    dead_letters: int

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def cpu_us_per_event(self) -> float:
        return self.cpu_seconds * 1e6 / self.records


@dataclass
class BenchOutcome:
    events: int
    spark_seconds: float
    spark_session_seconds: float
    single_seconds: float
    spark_written: int
    single_written: int
    cores: int
    master: str
    acl: AclRun
    stages: dict[str, float] = field(default_factory=dict)
    load_average: float = 0.0
    spark_cpu_seconds: float = 0.0
    single_cpu_seconds: float = 0.0
    cluster_master: str | None = None
    cluster_seconds: float | None = None
    cluster_written: int = 0
    single_peak_rss_mb: float = 0.0
    """This process's peak RSS once the single-process copy held every record (it numbers them in memory)."""
    scale: ScaleOutcome | None = None

    @property
    def spark_eps(self) -> float:
        return self.events / self.spark_seconds

    @property
    def single_eps(self) -> float:
        return self.events / self.single_seconds

    @property
    def cluster_eps(self) -> float | None:
        return self.events / self.cluster_seconds if self.cluster_seconds else None

    @property
    def ratio(self) -> float:
        return self.spark_eps / self.single_eps

    @property
    def spark_cpu_us(self) -> float:
        return self.spark_cpu_seconds * 1e6 / self.events

    @property
    def single_cpu_us(self) -> float:
        return self.single_cpu_seconds * 1e6 / self.events

    @property
    def cpu_to_acl(self) -> float:
        """The Spark job's CPU per record against the live ACL's."""
        return self.spark_cpu_us / self.acl.cpu_us_per_event

    def to_json(self) -> dict[str, Any]:
        """The run's one JSON line."""
        return {"spark_records_per_s": round(self.spark_eps, 1), "single_records_per_s": round(self.single_eps, 1),
                "ratio": round(self.ratio, 3), "spark_cpu_us_per_record": round(self.spark_cpu_us, 1),
                "single_cpu_us_per_record": round(self.single_cpu_us, 1),
                "acl_cpu_us_per_event": round(self.acl.cpu_us_per_event, 1),
                "acl_records_per_s": round(self.acl.records_per_s, 1),
                "cluster_records_per_s": None if self.cluster_eps is None else round(self.cluster_eps, 1),
                "spark_10m_seconds": None if self.scale is None else self.scale.seconds,
                "spark_10m_peak_rss_mb": None if self.scale is None else self.scale.peak_process_rss_mb,
                **asdict(self)}

    def table(self) -> RenderableType:
        """The figures for a log: a table, then the run's JSON line."""
        table = Table(title=f"backfill of {self.events:,} source records ({self.cores} cores, {self.master})")
        for column in ("", "seconds", "records/s", "CPU us/record", "written"):
            table.add_column(column)
        table.add_row("Spark job", f"{self.spark_seconds:.1f}", f"{self.spark_eps:,.0f}", f"{self.spark_cpu_us:.0f}",
                      f"{self.spark_written:,}")
        table.add_row("single process", f"{self.single_seconds:.1f}", f"{self.single_eps:,.0f}",
                      f"{self.single_cpu_us:.0f}", f"{self.single_written:,}")
        table.add_row("live ACL (rekey run acl)", f"{self.acl.seconds:.1f}", f"{self.acl.records_per_s:,.0f}",
                      f"{self.acl.cpu_us_per_event:.0f}", f"{self.acl.written:,}")
        if self.cluster_eps is not None and self.cluster_seconds is not None:
            table.add_row(f"Spark job on {self.cluster_master}", f"{self.cluster_seconds:.1f}",
                          f"{self.cluster_eps:,.0f}", "", f"{self.cluster_written:,}")
        table.add_row("ratio (local Spark / single)", "", f"{self.ratio:.2f}x", "", "")
        table.add_row("CPU ratio (local Spark / live ACL)", "", "", f"{self.cpu_to_acl:.2f}x", "")
        if self.scale is not None:
            table.add_row(f"Spark job, {self.scale.events:,} records, {self.scale.memory} per JVM",
                          f"{self.scale.seconds:.1f}", f"{self.scale.events / self.scale.seconds:,.0f}", "",
                          f"{self.scale.written:,}")
        return Group(table, *self._scale_lines(), Text(json.dumps(self.to_json(), sort_keys=True)))

    def _scale_lines(self) -> list[Text]:
        scale = self.scale
        if scale is None:
            return []
        peaks = ", ".join(f"{label} {mb:,.0f} MB" for label, mb in sorted(scale.peak_rss_mb.items()))
        return [Text(f"{scale.events:,}-record run: {scale.seconds / self.spark_seconds:.1f}x the time of the "
                     f"{self.events:,}-record run for {scale.events / self.events:.0f}x the records; peak RSS {peaks} "
                     f"({scale.python_workers} Python workers; all at once at most {scale.peak_total_rss_mb:,.0f} MB); "
                     f"Spark's scratch directory at most {scale.peak_spill_mb:,.0f} MB. The single-process copy "
                     f"peaked at {self.single_peak_rss_mb:,.0f} MB holding {self.events:,} records.")]

    def markdown(self) -> str:
        return "\n".join([
            SECTION,
            "",
            f"`rekey bench backfill --events {self.events}` on {self.cores} cores (`--master {self.master}`), "
            f"{time.strftime('%Y-%m-%d', time.gmtime())}. Same generated source topic, same work on both sides "
            "(translate + route with `shared`, dense per-key sequences in source order, Avro wire format, "
            "explicit Java-parity partitions, `seq`/`src` headers).",
            "",
            "| | seconds | source records/s | CPU us/record | records written |",
            "| --- | ---: | ---: | ---: | ---: |",
            f"| Spark backfill (`{self.master}`) | {self.spark_seconds:.1f} | {self.spark_eps:,.0f} | "
            f"{self.spark_cpu_us:.0f} | {self.spark_written:,} |",
            f"| single-process confluent-kafka copy | {self.single_seconds:.1f} | {self.single_eps:,.0f} | "
            f"{self.single_cpu_us:.0f} | {self.single_written:,} |",
            f"| live ACL (`rekey run acl`, at-least-once, RocksDB) | {self.acl.seconds:.1f} | "
            f"{self.acl.records_per_s:,.0f} | {self.acl.cpu_us_per_event:.0f} | {self.acl.written:,} |",
            *([f"| Spark backfill (`{self.cluster_master}`) | {self.cluster_seconds:.1f} | {self.cluster_eps:,.0f} "
               f"| | {self.cluster_written:,} |"] if self.cluster_eps is not None and self.cluster_seconds else []),
            f"| **ratio Spark / single process** | | **{self.ratio:.2f}x** | | |",
            f"| **CPU ratio Spark / live ACL** | | | **{self.cpu_to_acl:.2f}x** | |",
            *([f"| Spark backfill, {self.scale.events:,} records, {self.scale.memory} per JVM | "
               f"{self.scale.seconds:.1f} | {self.scale.events / self.scale.seconds:,.0f} | | {self.scale.written:,} |"]
              if self.scale is not None else []),
            "",
            *[line.plain + "\n" for line in self._scale_lines()],
            f"SparkSession start-up ({self.spark_session_seconds:.1f} s) is not included. 1-minute load average "
            f"at the end of the run: {self.load_average:.1f} (the machine is shared). Spark stages: "
            + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.stages.items()) + ".",
            "",
            f"Target: Spark at least {TARGET_RATIO}x the single process in `local[*]`: "
            + ("met." if self.ratio >= TARGET_RATIO else
               f"not met ({self.ratio:.2f}x). CPU per record is the whole process tree's (driver, JVM, Python "
               "workers) for Spark, the one process's for the copy; on this machine the two share the same cores."),
            "",
            f"Target: Spark's CPU per record at most {TARGET_CPU_TO_ACL}x the live ACL's: "
            + ("met" if self.cpu_to_acl <= TARGET_CPU_TO_ACL else "not met")
            + f" ({self.cpu_to_acl:.2f}x).",
            "",
        ])


def single_process_backfill(kafka: KafkaSettings, registry: RegistrySettings, catalog: Catalog, family: str,
                            source: str, source_format: str) -> int:
    """The same backfill in one Python process with confluent-kafka; returns the records written."""
    from kafka_rekey.services.kafka.producers import make_producer
    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.services.registry.serde import AvroSerde
    from kafka_rekey.shared.avro import load_schema, stamp_sequence, wire_header
    from kafka_rekey.shared.handoff import sequence_key
    from kafka_rekey.shared.pipeline import DomainRecord, RecordPipeline, Routed, sequence_headers
    from kafka_rekey.shared.sequencing import assign_sequences, source_order
    from kafka_rekey.shared.translation import SourceRecord

    schema = load_schema("interaction_event")
    with SchemaRegistryClient(registry) as client:
        wire = {t: wire_header(AvroSerde(client, catalog.topic(t).schema_subject, schema).schema_id)
                for t in catalog.family(family).output_topics}
    process = RecordPipeline(catalog, "bench", "0", wire).processor(source_format, (family,))
    config = kafka.librdkafka()
    offsets = snapshot(config, source)
    consumer = Consumer({**config, "group.id": f"rekey-bench-{uuid.uuid4()}", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "queued.max.messages.kbytes": 262144})
    consumer.assign([TopicPartition(source, p, o) for p, o in offsets.start.items() if offsets.end[p] > o])
    remaining = {p for p, end in offsets.end.items() if end > offsets.start[p]}
    keyed: list[tuple[str, Any, str, DomainRecord]] = []
    try:
        while remaining:
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error():
                    continue
                partition, offset = int(message.partition() or 0), int(message.offset() or 0)
                if offset >= offsets.end[partition]:
                    remaining.discard(partition)
                    continue
                headers = {str(k): bytes(v or b"") for k, v in (message.headers() or [])}  # type: ignore[str-unpack,arg-type]
                result = process(SourceRecord(source, partition, offset, message.key(), message.value(), headers,
                                              message.timestamp()[1]))
                if isinstance(result, Routed):
                    draft, (domain,) = result.draft, result.records
                    keyed.append((sequence_key(domain.route.topic, domain.route.key),
                                  source_order(draft.ordering_token, draft.source), draft.dedupe_id, domain))
                if offset + 1 >= offsets.end[partition]:
                    remaining.discard(partition)
    finally:
        consumer.close()
    producer = make_producer(kafka, **{"linger.ms": 20, "batch.size": 262144})
    written = 0
    for _key, sequence, domain in assign_sequences(keyed):
        target = domain.route
        while True:
            try:
                producer.produce(target.topic, key=target.key.encode(),
                                 value=stamp_sequence(domain.head, sequence, domain.tail), partition=target.partition,
                                 headers=sequence_headers(sequence, domain.src))
                break
            except BufferError:
                producer.poll(0.05)
        written += 1
        if written % 10_000 == 0:
            producer.poll(0)
    if producer.flush(300) > 0:
        raise RuntimeError("single-process copy: records not delivered in 300 s")
    return written


def live_acl_run(kafka: KafkaSettings, registry: RegistrySettings, catalog_path: Path, source: str, family: str,
                 work: Path) -> AclRun:
    """`rekey run acl` at-least-once with RocksDB state, in a consumer group of its own, over every record of
    `source` into `family`'s topics of `catalog_path` (a catalog whose sources feed that family only). Its time
    runs from its readiness (or its first output's CreateTime, when it wrote before its readiness was seen) to
    its last output's CreateTime; its CPU, from its readiness to when its group committed past every record of
    the source and of its sequencing topic (each record then written, dead-lettered or dropped)."""
    from kafka_rekey.services.check.drain import wait_drained
    from kafka_rekey_dev.embedded.workers import ServiceProcess

    catalog = load_catalog(catalog_path)
    config = kafka.librdkafka()
    records = snapshot(config, source).records
    group = f"rekey-bench-backfill-acl-{uuid.uuid4().hex[:8]}"
    acl = ServiceProcess("acl", {"REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
                                 "REKEY_REGISTRY_URL": registry.url, "REKEY_CATALOG_PATH": str(catalog_path),
                                 "REKEY_APP_ID": group, "REKEY_DATA_DIR": str(work / "acl-state"),
                                 "REKEY_STATE_STORE": "rocksdb", "REKEY_PROCESSING_GUARANTEE": "at_least_once"},
                         work, name="bench-backfill-acl")
    try:
        acl.start(ready_timeout=180)
        assert acl.process is not None
        started, cpu = time.time(), tree_cpu_seconds(acl.process.pid)
        wait_drained(config, group, [source, f"{group}-sequencing"], max(120.0, records / ACL_MIN_RECORDS_PER_S),
                     settle=1.0)
        cpu = tree_cpu_seconds(acl.process.pid) - cpu
    finally:
        acl.stop()
    outputs = [*catalog.family(family).output_topics, catalog.dlq_topic]
    ends = {topic: watermarks(config, topic) for topic in outputs}
    written = sum(high - low for topic in outputs[:-1] for low, high in ends[topic].values())
    dead_letters = sum(high - low for low, high in ends[catalog.dlq_topic].values())
    oldest, newest = _create_time_range(config, ends)
    return AclRun(records, round(newest - min(started, oldest), 2), round(cpu, 2), written, dead_letters)


def _create_time_range(config: dict[str, Any], ends: dict[str, dict[int, tuple[int, int]]]) -> tuple[float, float]:
    """The oldest CreateTime of the first records and the newest of the last records, in epoch seconds, of the
    partitions whose (low, high) watermarks `ends` gives per topic (no transaction markers: an at-least-once
    writer's topics)."""
    marks = [(topic, p, low, high) for topic, by_partition in ends.items() for p, (low, high) in by_partition.items()
             if high > low]
    first = _create_times(config, [TopicPartition(topic, p, low) for topic, p, low, _ in marks])
    last = _create_times(config, [TopicPartition(topic, p, high - 1) for topic, p, _, high in marks])
    return min(first) / 1000, max(last) / 1000


def _create_times(config: dict[str, Any], positions: list[TopicPartition]) -> list[int]:
    """The CreateTime of the record at each of `positions` (one per partition)."""
    consumer = Consumer({**config, "group.id": f"rekey-bench-{uuid.uuid4()}", "enable.auto.commit": False})
    stamps: list[int] = []
    left = {(tp.topic, tp.partition) for tp in positions}
    deadline = time.monotonic() + 60
    try:
        consumer.assign(positions)
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the records at {sorted(left)[:5]} not read in 60 s")
            for message in consumer.consume(len(left), timeout=1.0):
                where = (str(message.topic()), int(message.partition() or 0))
                if message.error() is None and where in left:
                    left.discard(where)
                    stamps.append(message.timestamp()[1])
    finally:
        consumer.close()
    return stamps


def run_bench(*, events: int, orgs: int, master: str | None, kafka: KafkaSettings,
              registry: RegistrySettings, console: Console, results: Path | None,
              cluster: str | None = None, conf: dict[str, str] | None = None, scale_events: int = 0,
              scale_memory: str = "1g") -> BenchOutcome:
    """Both sides on one generated topic, then the live ACL over it; `conf`, Spark properties of the first Spark run;
    with `cluster` (a standalone master), the Spark job a second time there, in a session of its own; with
    `scale_events` above `events`, the source topped up to that many records and the Spark job run over all of
    them in a process of its own, its JVM at `scale_memory` (`kafka_rekey_dev.bench.scale`)."""
    from kafka_rekey.services.generation import generate_to_topic
    from kafka_rekey.services.topics.apply import apply_catalog
    from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
    from kafka_rekey.spark_backfill.session import build_session
    from kafka_rekey_dev.bench.acl import one_family_catalog
    from kafka_rekey_dev.embedded.spark import dev_connector_jars

    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"rekey-bench-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    one_family, acl_family = one_family_catalog(REPO_CATALOG, work)
    paths = []
    for side, template in (("spark", REPO_CATALOG), ("single", REPO_CATALOG), ("cluster", REPO_CATALOG),
                           ("scale", REPO_CATALOG), ("acl", one_family)):
        path = work / f"catalog-{side}.yaml"
        path.write_text(_isolated(template.read_text(), uuid.uuid4().hex[:8]))
        paths.append(path)
    spark_catalog = load_catalog(paths[0])
    family = spark_catalog.default_family
    if acl_family != family:  # the ACL's source must feed the one family the backfill writes
        raise ValueError(f"{REPO_CATALOG}: the bench source's first family is {acl_family}, not the default family "
                         f"{family} the backfill writes")
    source = next(s.name for s in spark_catalog.sources if s.format == "ccaas-json")
    # Every run reads the Spark catalog's source topic; each other catalog names it as its own too.
    for path in paths[1:]:
        own_source = next(s.name for s in load_catalog(path).sources if s.format == "ccaas-json")
        path.write_text(path.read_text().replace(own_source, source))
    single_catalog = load_catalog(paths[1])
    config = kafka.librdkafka()
    for path in paths:
        apply_catalog(load_catalog(path), config)
    console.print(f"generating {events:,} source records into {source} ...")
    generate_to_topic(kafka, source, events, orgs, hot_orgs=("org-acme", "org-globex", "org-initech"), seed=7)

    started = time.monotonic()
    spark = build_session("rekey-bench-backfill", master,
                          conf={"spark.ui.showConsoleProgress": "false", **(conf or {})}, jars=dev_connector_jars())
    session_seconds = time.monotonic() - started
    console.print("Spark backfill ...")
    started, cpu = time.monotonic(), tree_cpu_seconds()
    report = run_backfill(spark, BackfillRequest([source], family, paths[0]), kafka, registry,
                          lambda name, s, d: console.print(f"  {name:<10} {s:6.1f} s  {d}", highlight=False))
    spark_seconds, spark_cpu = time.monotonic() - started, tree_cpu_seconds() - cpu
    console.print("single-process copy ...")
    started, cpu = time.monotonic(), time.process_time()
    written = single_process_backfill(kafka, registry, single_catalog, family, source, "ccaas-json")
    single_seconds, single_cpu = time.monotonic() - started, time.process_time() - cpu
    single_peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    spark.stop()  # each later run has a session, or a process, of its own
    console.print("live ACL ...")
    acl = live_acl_run(kafka, registry, paths[4], source, family, work)
    outcome = BenchOutcome(events, spark_seconds, session_seconds, single_seconds, report.written, written,
                           os.cpu_count() or 0, master or "local[*]", acl, dict(report.stages), os.getloadavg()[0],
                           round(spark_cpu, 2), round(single_cpu, 2), single_peak_rss_mb=round(single_peak_rss_mb, 1))
    if cluster is not None:
        outcome.cluster_master, (outcome.cluster_seconds, outcome.cluster_written) = cluster, _cluster_run(
            cluster, BackfillRequest([source], family, paths[2]), kafka, registry, console)
        outcome.load_average = os.getloadavg()[0]
    if scale_events > events:
        console.print(f"topping the source up to {scale_events:,} records ...")
        generate_to_topic(kafka, source, scale_events - events, orgs,
                          hot_orgs=("org-acme", "org-globex", "org-initech"), seed=8)
        console.print(f"Spark backfill of {scale_events:,} records, {scale_memory} per JVM ...")
        outcome.scale = run_at_scale(kafka=kafka, registry=registry, source=source, family=family,
                                     catalog=paths[3], events=scale_events, memory=scale_memory, work=work,
                                     echo=lambda line: console.print(f"  {line}", highlight=False, markup=False))
        outcome.load_average = os.getloadavg()[0]
    if results is not None:
        replace_section(results, SECTION, outcome.markdown())
    return outcome


def _cluster_run(master: str, request: Any, kafka: KafkaSettings, registry: RegistrySettings,
                 console: Console) -> tuple[float, int]:
    """(seconds, records written) of the backfill on a standalone cluster, its session's start left out."""
    from kafka_rekey.spark_backfill.jobs.backfill import run_backfill
    from kafka_rekey.spark_backfill.session import build_session
    from kafka_rekey_dev.embedded.spark import cluster_for, dev_connector_jars

    embedded = cluster_for(master)
    conf = {"spark.ui.showConsoleProgress": "false", **(embedded.session_conf() if embedded else {})}
    spark = build_session("rekey-bench-backfill-cluster", master, conf=conf,
                          jars=None if embedded else dev_connector_jars())
    console.print(f"Spark backfill on {master} ...")
    started = time.monotonic()
    report = run_backfill(spark, request, kafka, registry,
                          lambda name, s, d: console.print(f"  {name:<10} {s:6.1f} s  {d}", highlight=False))
    seconds = time.monotonic() - started
    spark.stop()
    return seconds, report.written

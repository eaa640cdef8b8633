"""The backfill job: republish a source's full history into a family's versioned topics, then hand off.

extract   every source topic up to a snapshot of its end offsets (or archived files);
transform `shared` translation + routing per record, dense per-key sequences by a Spark window;
load      Kafka sink with explicit Java-parity partitions, Avro wire-format values, `seq`/`src` headers as the
          live service writes them; poison pills to the DLQ; then the hand-off checkpoint (a CDC source's row ids
          with the data, last sequences, snapshot end offsets and the run record `complete` after them).

Re-runs: the run record in the checkpoint topic keeps the snapshot. A killed run, re-run, reads the same
records, so it rebuilds the same (key, sequence) pairs; it reads what the target topics and the DLQ already
hold and writes only the rest, so the result has no duplicate. A completed run is not repeated unless
`restart` (a new snapshot; its duplicates are identifiable by (key, sequence) and `rekey verify` counts them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.catalog_files import load_catalog
from services.settings import KafkaSettings, RegistrySettings
from shared.avro import load_schema, wire_header
from shared.catalog import Catalog, SourceTopic
from shared.translation import Translation, remembers_rows
from spark_backfill import checkpoint, extract, transform

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

StageCallback = Callable[[str, float, str], None]
WRITE_OPTIONS = {
    # Idempotent producer: broker-side retries never duplicate a record within a run.
    "kafka.enable.idempotence": "true",
    "kafka.acks": "all",
    "kafka.compression.type": "lz4",
    "kafka.linger.ms": "20",
    "kafka.batch.size": "262144",
    "kafka.max.in.flight.requests.per.connection": "5",
}


@dataclass
class BackfillRequest:
    sources: list[str]
    family: str
    catalog_path: Path
    checkpoint_topic: str | None = None
    from_files: str | None = None
    file_format: str = "parquet"
    source_format: str | None = None
    continue_after_checkpoint: bool = False
    restart: bool = False
    service_version: str = "0.1.0"


@dataclass
class BackfillReport:
    run_id: str
    sources: list[str]
    family: str
    resumed_from: str | None
    snapshot: list[dict[str, Any]]
    read: int = 0
    events: int = 0
    duplicates_dropped: int = 0
    written: int = 0
    already_written: int = 0
    keys: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    dead_lettered: dict[str, int] = field(default_factory=dict)
    per_topic: dict[str, int] = field(default_factory=dict)
    stages: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def events_per_second(self) -> float:
        return self.read / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "events_per_second": round(self.events_per_second, 1)}


def _source_formats(catalog: Catalog, sources: list[str], override: str | None) -> dict[str, Translation]:
    formats: dict[str, Translation] = {}
    for name in sources:
        if override:
            formats[name] = override
            continue
        try:
            spec = catalog.topic(name)
        except KeyError:
            spec = None
        if not isinstance(spec, SourceTopic):
            raise ValueError(f"{name!r} is not a source topic of the catalog: pass --source-format FORMAT")
        formats[name] = spec.translation
    return formats


def _ensure_checkpoint_topic(config: dict[str, Any], catalog: Catalog, name: str) -> None:
    """A `--manifest-topic` outside the catalog is created like the catalog's checkpoint topic (compacted)."""
    if name == catalog.checkpoint_topic:
        return
    from confluent_kafka.admin import AdminClient

    from services.kafka.topics import create_topics

    spec = catalog.topic(catalog.checkpoint_topic).model_copy(update={"name": name})
    with AdminClient(config) as admin:
        if name not in admin.list_topics(timeout=30).topics:
            create_topics(admin, [spec])


def _check_topics(config: dict[str, Any], catalog: Catalog, names: list[str]) -> None:
    """Every target topic exists with its catalog partition count (Java-parity placement depends on it)."""
    for name in names:
        try:
            marks = extract.watermarks(config, name)
        except ValueError:
            raise ValueError(f"topic {name!r} does not exist: create it with `rekey topics apply`") from None
        try:
            expected = catalog.topic(name).partitions
        except KeyError:
            continue  # a --manifest-topic of its own: any partition count will do
        if len(marks) != expected:
            raise ValueError(f"topic {name!r} has {len(marks)} partitions but the catalog says {expected}: "
                             "records would not land where the live service puts them")


class Timer:
    def __init__(self, report: BackfillReport, on_stage: StageCallback | None) -> None:
        self.report, self.on_stage, self.last = report, on_stage, time.monotonic()

    def stage(self, name: str, detail: str = "") -> None:
        now = time.monotonic()
        self.report.stages[name] = round(now - self.last, 2)
        if self.on_stage:
            self.on_stage(name, now - self.last, detail)
        self.last = now


def run_backfill(spark: SparkSession, request: BackfillRequest, kafka: KafkaSettings, registry: RegistrySettings,
                 on_stage: StageCallback | None = None) -> BackfillReport:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    config = kafka.librdkafka()
    catalog = load_catalog(request.catalog_path)
    family = catalog.family(request.family)
    outputs = family.output_topics
    checkpoint_topic = request.checkpoint_topic or catalog.checkpoint_topic
    formats = _source_formats(catalog, request.sources, request.source_format)
    cdc = any(remembers_rows(translation) for translation in formats.values())  # a source's rows' ids to hand off
    _ensure_checkpoint_topic(config, catalog, checkpoint_topic)
    _check_topics(config, catalog, [*outputs, catalog.dlq_topic, checkpoint_topic])

    # -- the run: new, or the resumption of a killed one on the same snapshot ------------------------------
    state = checkpoint.read_state(config, checkpoint_topic)
    run_name = "+".join(sorted(request.sources))
    previous = state.run(run_name, request.family)
    resumed_from: str | None = None
    if previous is not None and not request.restart:
        if previous.state == checkpoint.COMPLETE:
            raise ValueError(
                f"the backfill of {run_name} into {request.family} completed (run {previous.run_id}); "
                "its hand-off is in place. Pass --restart to run it again on a new snapshot (a second copy that "
                "`rekey verify` reports as duplicates), or backfill into a new topic version."
            )
        run, resumed_from = previous, previous.state
        snapshots = run.offsets
    else:
        continued = request.continue_after_checkpoint
        if request.from_files:
            snapshots = []
        else:
            snapshots = [
                extract.snapshot(config, name, {p: o for (t, p), o in state.handoff.source_offsets.items()
                                                if t == name} if continued else None)
                for name in request.sources
            ]
        run = checkpoint.RunRecord.create(run_name, request.family, snapshots, continued=continued)
    report = BackfillReport(run.run_id, request.sources, request.family, resumed_from,
                            [s.to_json() for s in snapshots])
    timer = Timer(report, on_stage)

    # -- extract ------------------------------------------------------------------------------------------
    if request.from_files:
        (name,) = request.sources if len(request.sources) == 1 else (None,)
        if name is None:
            raise ValueError("--from-files takes exactly one --source (the topic the files were archived from)")
        source = extract.read_files(spark, request.from_files, request.file_format, name)
        if not snapshots:
            snapshots = [extract.file_offsets(source, name)]
            run.offsets = snapshots
            report.snapshot = [s.to_json() for s in snapshots]
    else:
        frames = [extract.read_kafka(spark, kafka, s) for s in snapshots if s.records > 0]
        source = frames[0] if frames else spark.createDataFrame([], extract.source_schema())
        for frame in frames[1:]:
            source = source.unionByName(frame)
    if resumed_from is None:
        checkpoint.write_run(config, checkpoint_topic, run)
    timer.stage("snapshot", ", ".join(f"{s.topic}: {s.records} records" for s in snapshots))

    # -- schema ids, once, on the driver ------------------------------------------------------------------
    from services.registry.client import SchemaRegistryClient
    from services.registry.serde import AvroSerde

    schema = load_schema("interaction_event")
    with SchemaRegistryClient(registry) as client:
        wire = {t: wire_header(AvroSerde(client, catalog.topic(t).schema_subject, schema).schema_id)
                for t in outputs}

    start_after = None
    if run.continued:
        prefixes = tuple(f"{t}/" for t in outputs)
        lasts = [(k.split("/", 1)[0], k.split("/", 1)[1], v) for k, v in state.handoff.last_sequences.items()
                 if k.startswith(prefixes)]
        if lasts:
            start_after = spark.createDataFrame(lasts, "out_topic string, out_key string, last long")

    cached: DataFrame | None = None
    if run.state == checkpoint.STARTED:
        # -- transform: translate, route and number in one pass, cached once -------------------------------
        spec = transform.TranslateSpec(request.catalog_path.read_text(), str(request.catalog_path), request.family,
                                       formats, request.service_version, registry=registry)
        translated = transform.translate_source(source, spec)
        numbered = transform.sequence_events(translated, start_after).persist(StorageLevel.MEMORY_AND_DISK)
        cached = numbered
        counts = (numbered.groupBy("kind", "reason", "out_topic")
                  .agg(F.count(F.lit(1)).alias("n"), F.sum((F.col("sequence") == 1).cast("int")).alias("keys"))
                  .collect())
        report.skipped = _tally(counts, transform.SKIP)
        report.dead_lettered = _tally(counts, transform.POISON)
        report.per_topic = {str(r["out_topic"]): int(r["n"]) for r in counts if r["kind"] == transform.EVENT}
        # Without a prior hand-off each key has exactly one row numbered 1 (after one, only new keys do).
        report.keys = sum(int(r["keys"] or 0) for r in counts if r["kind"] == transform.EVENT)
        report.read = sum(int(r["n"]) for r in counts)
        report.duplicates_dropped = sum(int(r["n"]) for r in counts if r["kind"] == transform.DUPLICATE)
        report.events = sum(report.per_topic.values()) + report.duplicates_dropped
        timer.stage("translate", f"translate + route + sequence: {report.read} read, {report.events} events, "
                                 f"{report.duplicates_dropped} upstream duplicates dropped, {report.keys} keys")

        # -- load -----------------------------------------------------------------------------------------
        events = numbered.filter(F.col("kind") == transform.EVENT)
        rows = transform.kafka_rows(events, wire)
        poison = transform.dead_letter_rows(numbered.filter(F.col("kind") == transform.POISON), catalog.dlq_topic)
        if resumed_from is not None:
            rows, poison, report.already_written = _skip_written(spark, kafka, rows, poison, outputs,
                                                                 catalog.dlq_topic, request.sources)
        write = rows.unionByName(poison)
        write.write.format("kafka").options(**extract.spark_kafka_options(kafka)).options(**WRITE_OPTIONS).save()
        report.written = sum(report.per_topic.values()) - report.already_written
        if cdc:
            # Before `data_written`: a run resumed from there rewrites only the hand-off, without the translated
            # rows these come from. Rewritten alike by a re-run from `started`; read only after `complete`.
            _write_checkpoint(transform.checkpoint_row_rows(transform.last_row_ids(numbered), checkpoint_topic),
                              kafka)
        run.state = checkpoint.DATA_WRITTEN
        checkpoint.write_run(config, checkpoint_topic, run)
        timer.stage("write", f"{report.written} records to {', '.join(outputs)}; "
                             f"{sum(report.dead_lettered.values())} to {catalog.dlq_topic}"
                             + (f"; the ids of every CDC row to {checkpoint_topic}" if cdc else ""))
        last = transform.last_sequences(events)
    else:
        # The data was written before the kill: the hand-off's last sequences are what the targets hold.
        last = _written_last_sequences(spark, kafka, outputs)

    # -- hand-off -----------------------------------------------------------------------------------------
    _write_checkpoint(transform.checkpoint_sequence_rows(last, checkpoint_topic), kafka)
    report.seconds = round(time.monotonic() - started, 2)
    run.summary = {k: v for k, v in report.to_json().items() if k not in ("snapshot", "stages")}
    checkpoint.complete(config, checkpoint_topic, run)
    timer.stage("hand-off", f"{checkpoint_topic}: last sequence of every key, snapshot end of every source partition")
    report.seconds = round(time.monotonic() - started, 2)
    if cached is not None:
        cached.unpersist()
    return report


def _write_checkpoint(rows: DataFrame, kafka: KafkaSettings) -> None:
    rows.write.format("kafka").options(**extract.spark_kafka_options(kafka)).options(**WRITE_OPTIONS).save()


def _tally(counts: list[Any], kind: str) -> dict[str, int]:
    tally: dict[str, int] = {}
    for row in counts:
        if row["kind"] == kind:
            tally[str(row["reason"])] = tally.get(str(row["reason"]), 0) + int(row["n"])
    return tally


def _target_records(spark: SparkSession, kafka: KafkaSettings, topics: list[str]) -> DataFrame:
    """(out_topic, out_key, sequence) of every record the target topics hold now (the `seq` header)."""
    from pyspark.sql import functions as F

    config = kafka.librdkafka()
    ranges = [extract.OffsetRange(t, {p: lo for p, (lo, _hi) in marks.items()},
                                  {p: hi for p, (_lo, hi) in marks.items()})
              for t in topics for marks in [extract.watermarks(config, t)]]
    frame = extract.read_kafka_topics(spark, kafka, ranges)
    seq = F.filter(F.col("headers"), lambda h: h["key"] == "seq")[0]["value"]
    return frame.select(F.col("topic").alias("out_topic"), F.decode(F.col("key"), "UTF-8").alias("out_key"),
                        F.decode(seq, "UTF-8").cast("long").alias("sequence"))


def _written_last_sequences(spark: SparkSession, kafka: KafkaSettings, topics: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    return (_target_records(spark, kafka, topics).groupBy("out_topic", "out_key")
            .agg(F.max("sequence").alias("last")))


def _skip_written(spark: SparkSession, kafka: KafkaSettings, rows: DataFrame, poison: DataFrame,
                  outputs: list[str], dlq_topic: str, sources: list[str]) -> tuple[DataFrame, DataFrame, int]:
    """Drop what a killed run already wrote: records by (topic, key, sequence), dead letters by source position."""
    from pyspark.sql import functions as F

    written = (_target_records(spark, kafka, outputs)
               .select(F.col("out_topic").alias("topic"), F.encode("out_key", "UTF-8").alias("key"),
                       F.col("sequence").alias("_seq")).distinct())
    seq = F.decode(F.filter(F.col("headers"), lambda h: h["key"] == "seq")[0]["value"], "UTF-8").cast("long")
    numbered = rows.withColumn("_seq", seq)
    already = numbered.join(written, ["topic", "key", "_seq"], "left_semi").count()
    remaining = numbered.join(written, ["topic", "key", "_seq"], "left_anti").drop("_seq")

    def header(name: str) -> Any:
        return F.decode(F.filter(F.col("headers"), lambda h: h["key"] == name)[0]["value"], "UTF-8")

    dlq_marks = extract.watermarks(kafka.librdkafka(), dlq_topic)
    dead = extract.read_kafka(spark, kafka, extract.OffsetRange(
        dlq_topic, {p: lo for p, (lo, _hi) in dlq_marks.items()}, {p: hi for p, (_lo, hi) in dlq_marks.items()}))
    dead_positions = (dead.filter((header("dlq.service") == transform.SERVICE)
                                  & header("dlq.source.topic").isin(sources))
                      .select(header("dlq.source.topic").alias("_t"),
                              header("dlq.source.partition").cast("int").alias("_p"),
                              header("dlq.source.offset").cast("long").alias("_o")).distinct())
    positioned = poison.select("*", header("dlq.source.topic").alias("_t"),
                               header("dlq.source.partition").cast("int").alias("_p"),
                               header("dlq.source.offset").cast("long").alias("_o"))
    remaining_poison = positioned.join(dead_positions, ["_t", "_p", "_o"], "left_anti").drop("_t", "_p", "_o")
    return remaining, remaining_poison, already

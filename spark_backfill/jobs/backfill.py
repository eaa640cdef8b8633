"""The backfill job: republish a source's full history into a family's versioned topics, then hand off.

extract   every source topic up to a snapshot of its end offsets, read by the Python workers in offset-range splits
          (`kafka_ranges`), or archived files;
transform `shared` translation + routing per record; each output key's rows into one write task, sorted in
          source order (`transform.for_numbering`);
load      each write task numbers its keys densely and writes them from the Python worker in one Kafka transaction
          (`sink`): explicit Java-parity partitions, Avro wire-format values, `seq`/`src` headers as the live
          service writes them, poison pills to the DLQ, each key's last sequence to the hand-off topic; then a CDC
          source's row ids, the snapshot end offsets and the run record `complete`.

Re-runs: the run record in the hand-off topic keeps the snapshot and the number of write tasks. A killed run,
re-run, reads the same records into the same tasks; it fences the killed run's open transactions and skips the
tasks whose completion marker committed, so the result has no duplicate. A completed run is not repeated unless
`restart` (a new snapshot; its duplicates are identifiable by (key, sequence) and `rekey verify` counts them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_rekey.services import handoff
from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.avro import load_schema, wire_header
from kafka_rekey.shared.catalog import Catalog, SourceTopic
from kafka_rekey.shared.translation import Translation, remembers_rows
from kafka_rekey.spark_backfill import extract, kafka_ranges, sink, transform

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

StageCallback = Callable[[str, float, str], None]
ROW_ID_WRITE_OPTIONS = {
    # A retried task writes the same `row/` records again: compaction keeps one, the live ACL reads the last.
    "kafka.enable.idempotence": "true",
    "kafka.acks": "all",
    "kafka.compression.type": "lz4",
    "kafka.linger.ms": "20",
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

    from kafka_rekey.services.kafka.topics import create_topics

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
    started = time.monotonic()
    if spark.sparkContext.getConf().get("spark.speculation", "false").lower() == "true":
        raise ValueError("spark.speculation is on: a speculative copy of a write task would fence the task it "
                         "copies; run the backfill without it")
    config = kafka.librdkafka()
    catalog = load_catalog(request.catalog_path)
    family = catalog.family(request.family)
    outputs = family.output_topics
    handoff_topic = request.checkpoint_topic or catalog.checkpoint_topic
    formats = _source_formats(catalog, request.sources, request.source_format)
    cdc = any(remembers_rows(translation) for translation in formats.values())  # a source's rows' ids to hand off
    _ensure_checkpoint_topic(config, catalog, handoff_topic)
    _check_topics(config, catalog, [*outputs, catalog.dlq_topic, handoff_topic])

    # -- the run: new, or the resumption of a killed one on the same snapshot ------------------------------
    run_name = "+".join(sorted(request.sources))
    previous = handoff.read_runs(config, handoff_topic).get(handoff.run_key(run_name, request.family).decode())
    resumed_from: str | None = None
    done: dict[int, dict[str, Any]] = {}
    if previous is not None and not request.restart:
        if previous.state == handoff.COMPLETE:
            raise ValueError(
                f"the backfill of {run_name} into {request.family} completed (run {previous.run_id}); "
                "its hand-off is in place. Pass --restart to run it again on a new snapshot (a second copy that "
                "`rekey verify` reports as duplicates), or backfill into a new topic version."
            )
        run, resumed_from = previous, previous.state
        snapshots = run.offsets
        if run.write_partitions:
            # Abort what the killed run's tasks left open, then read which of them committed.
            handoff.fence(config, run.run_id, run.write_partitions)
            done = {p: tally for (run_id, p), tally in handoff.read_handoff(config, handoff_topic, False).tasks.items()
                    if run_id == run.run_id}
    else:
        continued = request.continue_after_checkpoint
        handed_off = handoff.read_handoff(config, handoff_topic, False).handoff if continued else None
        if request.from_files:
            snapshots = []
        else:
            snapshots = [
                extract.snapshot(config, name, {p: o for (t, p), o in handed_off.source_offsets.items()
                                                if t == name} if handed_off else None)
                for name in request.sources
            ]
        run = handoff.RunRecord.create(run_name, request.family, snapshots, continued=continued)
    run.write_partitions = run.write_partitions or int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
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
        source = None  # the Python workers read the snapshot themselves (`transform.translate_kafka`)
    if resumed_from is None:
        handoff.write_run(config, handoff_topic, run)
    timer.stage("snapshot", ", ".join(f"{s.topic}: {s.records} records" for s in snapshots))

    if run.state == handoff.STARTED:
        # -- schema ids, once, on the driver --------------------------------------------------------------
        from kafka_rekey.services.registry.client import SchemaRegistryClient
        from kafka_rekey.services.registry.serde import AvroSerde

        schema = load_schema("interaction_event")
        with SchemaRegistryClient(registry) as client:
            wire = {t: wire_header(AvroSerde(client, catalog.topic(t).schema_subject, schema).schema_id)
                    for t in outputs}
        start_after = None
        if run.continued:
            handed_off = handoff.read_handoff(config, handoff_topic, False).handoff
            prefixes = tuple(f"{t}/" for t in outputs)
            lasts = [(k.split("/", 1)[0], k.split("/", 1)[1], v) for k, v in handed_off.last_sequences.items()
                     if k.startswith(prefixes)]
            if lasts:
                start_after = spark.createDataFrame(lasts, "out_topic string, out_key string, last long")

        # -- transform and load in one pass: translate, number and write each key's rows ------------------
        spec = transform.TranslateSpec(request.catalog_path.read_text(), str(request.catalog_path), request.family,
                                       formats, request.service_version, wire=wire, registry=registry,
                                       columns=transform.backfill_columns(row_ids=cdc))
        translated = (transform.translate_source(source, spec) if source is not None else
                      transform.translate_kafka(spark, config, snapshots, spec, kafka_ranges.READ_BATCH))
        ordered = transform.for_numbering(translated, run.write_partitions, start_after)
        marks = extract.watermarks(config, handoff_topic)
        plan = sink.TaskWrite(config, run.run_id, catalog.dlq_topic, handoff_topic, len(marks),
                              {p: high for p, (_low, high) in marks.items()}, done)
        tallies = ordered.mapInArrow(sink.write_tasks(plan), sink.tally_schema()).collect()  # type: ignore[arg-type]
        _report(report, [(int(row["partition"]), json.loads(row["tally"])) for row in tallies], done)
        timer.stage("write", f"translate + route + number + write: {report.read} read, {report.events} events, "
                             f"{report.duplicates_dropped} upstream duplicates dropped, {report.keys} keys; "
                             f"{report.written} records to {', '.join(outputs)}"
                             + (f" ({report.already_written} by the killed run)" if report.already_written else "")
                             + f"; {sum(report.dead_lettered.values())} to {catalog.dlq_topic}")
        if cdc:
            # Before `data_written`: a run resumed from there rewrites only the rest of the hand-off.
            _write_row_ids(transform.checkpoint_row_rows(transform.last_row_ids(translated), handoff_topic), kafka)
            timer.stage("row ids", f"the ids of every CDC row to {handoff_topic}")
        run.state = handoff.DATA_WRITTEN
        handoff.write_run(config, handoff_topic, run)

    # -- hand-off: every key's last sequence went with its records; the snapshot end offsets, then `complete`
    report.seconds = round(time.monotonic() - started, 2)
    run.summary = {k: v for k, v in report.to_json().items() if k not in ("snapshot", "stages")}
    handoff.complete(config, handoff_topic, run)
    timer.stage("hand-off", f"{handoff_topic}: snapshot end of every source partition, run complete")
    report.seconds = round(time.monotonic() - started, 2)
    return report


def _report(report: BackfillReport, tallies: list[tuple[int, dict[str, Any]]], done: dict[int, Any]) -> None:
    """Add up the write tasks' tallies (`transform.TaskTally.summary`)."""
    for partition, tally in tallies:
        for kind, reason, topic, n in tally["counts"]:
            report.read += n
            if kind == transform.SKIP:
                report.skipped[reason] = report.skipped.get(reason, 0) + n
            elif kind == transform.POISON:
                report.dead_lettered[reason] = report.dead_lettered.get(reason, 0) + n
            elif kind == transform.DUPLICATE:
                report.duplicates_dropped += n
            else:
                report.per_topic[topic] = report.per_topic.get(topic, 0) + n
        report.keys += tally["keys"]
        if partition in done:
            report.already_written += tally["written"]
        else:
            report.written += tally["written"]
    report.events = sum(report.per_topic.values()) + report.duplicates_dropped


def _write_row_ids(rows: DataFrame, kafka: KafkaSettings) -> None:
    rows.write.format("kafka").options(**extract.spark_kafka_options(kafka)).options(**ROW_ID_WRITE_OPTIONS).save()



"""The verification job: does the target hold exactly the source's events, correctly keyed and numbered?

extract   the source(s) up to a snapshot (or, in a dual-run window, up to what the live ACL's consumer group has
          committed), and the target topics up to their current end, both read in the Python workers
          (`kafka_ranges`, read_committed);
transform the source through the same `shared` translation + routing + dedupe as the backfill and the live
          service (`transform.translate_kafka`); the target's Avro values decoded with their registered writer
          schemas as they are read;
compare   per org and event-time window: counts and a SHA1 over the sorted record identities
          (`topic|key|event_id`), naming the records (hence the keys) of every mismatching window; per key, over
          the whole target: sequences dense from 1 without duplicates, `seq` header = payload sequence, every
          record on `partition_for(key, partitions)` (Java parity).

Only target records whose `src` position lies inside the compared source range take part in the window
comparison, so live records of newer source offsets (dual run) or of other sources do not count as extra.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, TopicPartition

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.spark_backfill import extract, transform

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from rich.console import Console

    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.shared.translation import SourceRecord

MAX_LISTED = 50


@dataclass
class VerifyRequest:
    sources: list[str]
    targets: list[str]
    family: str | None
    catalog_path: Path
    window_ms: int = 3_600_000
    live_group: str | None = None
    source_format: str | None = None
    # At-least-once targets: identical copies of a record (same key, sequence, event and source position) are
    # redeliveries a consumer deduplicating by (key, sequence) drops; counted, not failed. A sequence given to
    # two different events still fails.
    allow_redeliveries: bool = False


@dataclass
class VerifyResult:
    sources: list[str]
    targets: list[str]
    family: str
    window_ms: int
    source_ranges: list[dict[str, Any]]
    source_events: int = 0
    target_records: int = 0
    target_in_range: int = 0
    windows_compared: int = 0
    keys_checked: int = 0
    window_mismatches: list[dict[str, Any]] = field(default_factory=list)
    record_differences: list[dict[str, Any]] = field(default_factory=list)
    key_problems: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0
    redeliveries: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.window_mismatches or self.key_problems or self.record_differences)

    @property
    def keys_named(self) -> list[str]:
        names = [f"{p['topic']}/{p['key']}" for p in self.key_problems]
        names += [f"{d['topic']}/{d['key']}" for d in self.record_differences]
        return list(dict.fromkeys(names))

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "keys_named": self.keys_named}


def _committed(config: Mapping[str, Any], group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=30)
        return {tp.partition: tp.offset for tp in committed if tp.offset >= 0}
    finally:
        consumer.close()


def source_ranges(config: Mapping[str, Any], sources: list[str], live_group: str | None) -> list[extract.OffsetRange]:
    """What the comparison covers: each source from its earliest offset up to its end now, or, with a live
    group, up to the offsets that group has committed (what the live service has certainly processed)."""
    ranges = []
    for name in sources:
        marks = extract.watermarks(config, name)
        end = {p: high for p, (_low, high) in marks.items()}
        if live_group:
            for partition, offset in _committed(config, live_group, name, list(marks)).items():
                end[partition] = min(end[partition], offset)
        ranges.append(extract.OffsetRange(name, {p: low for p, (low, _h) in marks.items()}, end))
    return ranges


def read_target(spark: SparkSession, config: Mapping[str, Any], ranges: list[extract.OffsetRange],
                registry: RegistrySettings) -> DataFrame:
    """The target's records, read in the Python workers (`kafka_ranges`, read_committed: aborted transactions were
    never written) and decoded in the same `mapInArrow` (`target_schema`): a topic's many small partitions are read
    by one consumer per group (`kafka_ranges.group_splits`), not a task each."""
    from kafka_rekey.spark_backfill.kafka_ranges import group_splits, groups_frame, splits

    pieces = spark.sparkContext.defaultParallelism
    groups = group_splits(splits(ranges, pieces, whole_partitions=False), pieces)
    partitions = {r.topic: len(r.end) for r in ranges}
    return groups_frame(spark, groups).mapInArrow(decode_splits(config, registry, partitions),  # type: ignore[arg-type]
                                                  target_schema())


def decode_splits(config: Mapping[str, Any], registry: RegistrySettings, partitions: Mapping[str, int]
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """`mapInArrow` over a group of `kafka_ranges.SPLIT_COLUMNS` rows: their target records read by one consumer
    -> decoded identity, sequence and the Java-parity partition of the key; writer schemas looked up by id in the
    registry."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        from kafka_rekey.services.registry.client import SchemaRegistryClient
        from kafka_rekey.spark_backfill.kafka_ranges import READ_BATCH, SPLIT_COLUMNS, Split, read_splits

        parts = [Split(*row) for batch in batches
                 for row in zip(*(batch.column(name).to_pylist() for name in SPLIT_COLUMNS), strict=True)]
        arrow_schema = to_arrow_schema(target_schema())
        with SchemaRegistryClient(registry) as client:
            for records in read_splits(config, parts, READ_BATCH):
                yield _decoded(records, client, partitions, arrow_schema)

    return run


def _decoded(records: list[SourceRecord], client: SchemaRegistryClient, partitions: Mapping[str, int],
             arrow_schema: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    from kafka_rekey.services.registry.errors import SchemaNotFound, SchemaRegistryError
    from kafka_rekey.shared.avro import decode_body, unframe
    from kafka_rekey.shared.partitioning import partition_for

    out: dict[str, list[Any]] = {name: [] for name in arrow_schema.names}
    for record in records:
        topic, header = record.topic, record.headers
        row: dict[str, Any] = dict.fromkeys(arrow_schema.names)
        out_key = record.key.decode("utf-8", "replace") if record.key is not None else None
        row.update(out_topic=topic, partition=record.partition, offset=record.offset, out_key=out_key)
        row["expected_partition"] = partition_for(out_key, partitions[topic]) if out_key else None
        seq_header = header.get("seq")
        row["seq_header"] = int(seq_header) if seq_header and seq_header.isdigit() else None
        src = header.get("src")
        if src:
            src_topic, src_partition, src_offset = src.decode().rsplit("/", 2)
            row.update(src_topic=src_topic, src_partition=int(src_partition), src_offset=int(src_offset))
        try:
            schema_id, body = unframe(record.value)  # type: ignore[arg-type]
            decoded = decode_body(body, client.schema_by_id(schema_id).parsed)
            row.update(org_id=decoded["org_id"], event_id=decoded["event_id"],
                       event_time_ms=int(decoded["event_time"]) if not hasattr(decoded["event_time"], "timestamp")
                       else int(decoded["event_time"].timestamp() * 1000),
                       sequence=int(decoded["sequence"]))
        except Exception as error:  # any undecodable value is a finding, not a crash; the registry failing is not
            if isinstance(error, SchemaRegistryError) and not isinstance(error, SchemaNotFound):
                raise
            row["decode_error"] = f"{type(error).__name__}: {error}"[:300]
        for name in arrow_schema.names:
            out[name].append(row[name])
    return pa.RecordBatch.from_pydict(out, schema=arrow_schema)


# What the expected side reads of the translated source.
EXPECTED_COLUMNS = ("kind", "org_id", "out_topic", "out_key", "dedupe_id", "event_id", "event_time_ms",
                    *transform.ORDER_COLUMNS)
REDELIVERY_IDENTITY = ("out_topic", "out_key", "sequence", "event_id", "src_topic", "src_partition", "src_offset")


def target_schema() -> Any:
    from pyspark.sql import types as T

    return T.StructType([
        T.StructField("out_topic", T.StringType()), T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()), T.StructField("out_key", T.StringType()),
        T.StructField("expected_partition", T.IntegerType()), T.StructField("seq_header", T.LongType()),
        T.StructField("src_topic", T.StringType()), T.StructField("src_partition", T.IntegerType()),
        T.StructField("src_offset", T.LongType()), T.StructField("org_id", T.StringType()),
        T.StructField("event_id", T.StringType()), T.StructField("event_time_ms", T.LongType()),
        T.StructField("sequence", T.LongType()), T.StructField("decode_error", T.StringType()),
    ])


def _checksums(frame: DataFrame, window_ms: int, prefix: str) -> DataFrame:
    from pyspark.sql import functions as F

    identity = F.concat_ws("|", "out_topic", "out_key", "event_id")
    return (frame.withColumn("window_start", F.floor(F.col("event_time_ms") / window_ms) * window_ms)
            .groupBy("org_id", "window_start")
            .agg(F.count(F.lit(1)).alias(f"{prefix}_count"),
                 F.sha1(F.concat_ws("\n", F.array_sort(F.collect_list(identity)))).alias(f"{prefix}_sha1")))


def run_verify(spark: SparkSession, request: VerifyRequest, kafka: KafkaSettings,
               registry: RegistrySettings) -> VerifyResult:
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kafka_rekey.spark_backfill.jobs.backfill import _source_formats
    from kafka_rekey.spark_backfill.kafka_ranges import READ_BATCH

    started = time.monotonic()
    config = kafka.librdkafka()
    catalog = load_catalog(request.catalog_path)
    family = request.family
    if family is None:
        if not request.targets:
            raise ValueError("give --target TOPIC (repeatable) or --target-family F")
        owners = [name for name, spec in catalog.families.items() if request.targets[0] in spec.output_topics]
        if not owners:
            raise ValueError(f"--target {request.targets[0]!r} is not an output topic of any catalog family")
        family = owners[0]
    targets = list(dict.fromkeys(request.targets or catalog.family(family).output_topics))
    formats = _source_formats(catalog, request.sources, request.source_format)

    # -- extract: both sides, as of now -------------------------------------------------------------------
    ranges = source_ranges(config, request.sources, request.live_group)
    target_ranges = [extract.OffsetRange(t, {p: lo for p, (lo, _hi) in marks.items()},
                                         {p: hi for p, (_lo, hi) in marks.items()})
                     for t in targets for marks in [extract.watermarks(config, t)]]
    result = VerifyResult(request.sources, targets, family, request.window_ms, [r.to_json() for r in ranges])

    spec = transform.TranslateSpec(request.catalog_path.read_text(), str(request.catalog_path), family, formats,
                                   encode=False, registry=registry, columns=EXPECTED_COLUMNS)
    translated = transform.translate_kafka(spark, config, ranges, spec, READ_BATCH)
    expected = (transform.sequence_events(
        translated.filter((F.col("kind") == transform.EVENT) & F.col("out_topic").isin(targets))
        .select("org_id", "out_topic", "out_key", "dedupe_id", "event_id", "event_time_ms", *transform.ORDER_COLUMNS))
        .drop("sequence").persist(StorageLevel.MEMORY_AND_DISK))
    target = read_target(spark, config, target_ranges, registry).persist(StorageLevel.MEMORY_AND_DISK)
    if request.allow_redeliveries:
        copies = target.count()
        target = target.dropDuplicates(list(REDELIVERY_IDENTITY)).persist(StorageLevel.MEMORY_AND_DISK)
        result.redeliveries = copies - target.count()

    # -- per org and window ------------------------------------------------------------------------------
    bounds = spark.createDataFrame(
        [(r.topic, p, r.start.get(p, 0), r.end[p]) for r in ranges for p in r.end],
        "src_topic string, src_partition int, lo long, hi long")
    in_range = (target.join(F.broadcast(bounds), ["src_topic", "src_partition"])
                .filter((F.col("src_offset") >= F.col("lo")) & (F.col("src_offset") < F.col("hi")))
                .drop("lo", "hi"))
    windows = (_checksums(expected, request.window_ms, "source")
               .join(_checksums(in_range.filter(F.col("decode_error").isNull()), request.window_ms, "target"),
                     ["org_id", "window_start"], "full_outer")).persist(StorageLevel.MEMORY_AND_DISK)
    mismatched = windows.filter(
        ~F.coalesce(F.col("source_count") == F.col("target_count"), F.lit(False))
        | ~F.coalesce(F.col("source_sha1") == F.col("target_sha1"), F.lit(False)))
    totals = windows.agg(F.count(F.lit(1)).alias("n"), F.sum("source_count").alias("source"),
                         F.sum("target_count").alias("target")).collect()[0]
    result.windows_compared = int(totals["n"])
    result.source_events = int(totals["source"] or 0)
    result.target_in_range = int(totals["target"] or 0)
    bad_windows = mismatched.orderBy("org_id", "window_start").collect()
    windows.unpersist()
    result.window_mismatches = [
        {"org_id": r["org_id"], "window_start_ms": r["window_start"],
         "window_start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r["window_start"] / 1000)),
         "source_count": r["source_count"] or 0, "target_count": r["target_count"] or 0,
         "source_sha1": r["source_sha1"], "target_sha1": r["target_sha1"]}
        for r in bad_windows
    ]

    # -- the records (and so the keys) behind every mismatching window ------------------------------------
    if bad_windows:
        window_of = F.floor(F.col("event_time_ms") / request.window_ms) * request.window_ms
        cols = ["org_id", "window_start", "out_topic", "out_key", "event_id"]
        keys = spark.createDataFrame([(r["org_id"], r["window_start"]) for r in bad_windows],
                                     "org_id string, window_start long")
        src = (expected.withColumn("window_start", window_of).join(F.broadcast(keys), ["org_id", "window_start"])
               .groupBy(*cols).agg(F.count(F.lit(1)).alias("expected")))
        tgt = (in_range.withColumn("window_start", window_of).join(F.broadcast(keys), ["org_id", "window_start"])
               .groupBy(*cols).agg(F.count(F.lit(1)).alias("found"),
                                   F.sort_array(F.collect_list("sequence")).alias("sequences")))
        diffs = (src.join(tgt, cols, "full_outer")
                 .filter(~F.coalesce(F.col("expected") == F.col("found"), F.lit(False)))
                 .orderBy("org_id", "window_start", "out_topic", "out_key", "event_id").limit(MAX_LISTED).collect())
        result.record_differences = [
            {"org_id": r["org_id"], "window_start_ms": r["window_start"], "topic": r["out_topic"],
             "key": r["out_key"], "event_id": r["event_id"], "expected": r["expected"] or 0, "found": r["found"] or 0,
             "sequences": list(r["sequences"] or []),
             "problem": "missing" if not r["found"] else "unexpected" if not r["expected"] else "duplicated"}
            for r in diffs
        ]

    # -- per key, over the whole target -------------------------------------------------------------------
    occurrences = Window.partitionBy("out_topic", "out_key", "sequence")
    per_key = (target.withColumn("_copies", F.count(F.lit(1)).over(occurrences))
               .groupBy("out_topic", "out_key")
               .agg(F.count(F.lit(1)).alias("records"), F.countDistinct("sequence").alias("distinct"),
                    F.min("sequence").alias("first"), F.max("sequence").alias("last"),
                    F.sum((F.col("partition") != F.col("expected_partition")).cast("int")).alias("misplaced"),
                    F.first("partition").alias("partition"), F.first("expected_partition").alias("expected_partition"),
                    F.sum((F.col("seq_header") != F.col("sequence")).cast("int")).alias("header_mismatch"),
                    F.sum(F.col("decode_error").isNotNull().cast("int")).alias("undecodable"),
                    F.sort_array(F.collect_set(F.when(F.col("_copies") > 1, F.col("sequence")))).alias("dup_seqs")))
    per_key = per_key.persist(StorageLevel.MEMORY_AND_DISK)
    problems = per_key.filter(
        (F.col("records") != F.col("distinct")) | (F.col("first") != 1) | (F.col("last") != F.col("distinct"))
        | (F.col("misplaced") > 0) | (F.col("header_mismatch") > 0) | (F.col("undecodable") > 0))
    key_totals = per_key.agg(F.count(F.lit(1)).alias("keys"), F.sum("records").alias("records"),
                             F.sum(F.col("records") - F.col("distinct")).alias("duplicates")).collect()[0]
    result.keys_checked = int(key_totals["keys"])
    result.target_records = int(key_totals["records"] or 0)
    result.duplicates = int(key_totals["duplicates"] or 0)
    problem_rows = problems.orderBy("out_topic", "out_key").limit(MAX_LISTED).collect()
    per_key.unpersist()
    missing = _missing_sequences(target, [(r["out_topic"], r["out_key"]) for r in problem_rows
                                          if r["last"] is not None and r["last"] != r["distinct"]])
    for r in problem_rows:
        found = []
        if r["undecodable"]:
            found.append(f"{r['undecodable']} undecodable value(s)")
        if r["records"] != r["distinct"]:
            found.append(f"duplicate sequence(s) {list(r['dup_seqs'])[:10]}")
        if r["first"] is not None and r["first"] != 1:
            found.append(f"starts at {r['first']}, not 1")
        if r["last"] is not None and r["last"] != r["distinct"]:
            found.append(f"gap: missing {missing.get((r['out_topic'], r['out_key']), [])[:10]}")
        if r["misplaced"]:
            found.append(f"{r['misplaced']} record(s) not on partition {r['expected_partition']}")
        if r["header_mismatch"]:
            found.append(f"{r['header_mismatch']} record(s) whose seq header differs from the payload")
        result.key_problems.append({"topic": r["out_topic"], "key": r["out_key"], "records": r["records"],
                                    "first": r["first"], "last": r["last"], "problems": found})
    for frame in (expected, target):
        frame.unpersist()
    result.seconds = round(time.monotonic() - started, 2)
    return result


def _missing_sequences(target: DataFrame, keys: list[tuple[str, str]]) -> dict[tuple[str, str], list[int]]:
    """The absent sequence numbers of a few keys with gaps (for the report)."""
    from pyspark.sql import functions as F

    if not keys:
        return {}
    wanted = target.sparkSession.createDataFrame(keys, "out_topic string, out_key string")
    rows = (target.join(F.broadcast(wanted), ["out_topic", "out_key"]).groupBy("out_topic", "out_key")
            .agg(F.collect_set("sequence").alias("seqs")).collect())
    gaps = {}
    for r in rows:
        present = {s for s in r["seqs"] if s is not None}
        gaps[(r["out_topic"], r["out_key"])] = [s for s in range(1, max(present, default=0) + 1) if s not in present]
    return gaps


def render(result: VerifyResult, console: Console) -> None:
    from rich.table import Table

    summary = Table(title=f"verify {' + '.join(result.sources)} -> {', '.join(result.targets)}", show_header=False)
    for name, value in [
        ("source events (deduplicated)", f"{result.source_events:,}"),
        ("target records (in source range)", f"{result.target_records:,} ({result.target_in_range:,})"),
        ("org x window compared", f"{result.windows_compared:,} (window {result.window_ms // 1000} s)"),
        ("keys checked", f"{result.keys_checked:,}"),
        ("mismatching windows", str(len(result.window_mismatches))),
        ("keys with problems", str(len(result.key_problems))),
        ("duplicate records", str(result.duplicates)),
        ("redeliveries (identical copies, allowed)", str(result.redeliveries)),
        ("result", "[bold green]OK[/]" if result.ok else "[bold red]MISMATCH[/]"),
    ]:
        summary.add_row(name, value)
    console.print(summary)
    if result.window_mismatches:
        table = Table(title="mismatching org x window")
        for column in ("org", "window start", "source", "target", "source sha1", "target sha1"):
            table.add_column(column)
        for w in result.window_mismatches[:MAX_LISTED]:
            table.add_row(w["org_id"], w["window_start"], str(w["source_count"]), str(w["target_count"]),
                          (w["source_sha1"] or "-")[:12], (w["target_sha1"] or "-")[:12])
        console.print(table)
    if result.record_differences:
        table = Table(title="records behind them")
        for column in ("topic", "key", "event id", "expected", "found", "problem"):
            table.add_column(column)
        for d in result.record_differences:
            table.add_row(d["topic"], d["key"], d["event_id"], str(d["expected"]), str(d["found"]), d["problem"])
        console.print(table)
    if result.key_problems:
        table = Table(title="keys with problems")
        for column in ("topic", "key", "records", "first", "last", "problems"):
            table.add_column(column)
        for p in result.key_problems:
            table.add_row(p["topic"], p["key"], str(p["records"]), str(p["first"]), str(p["last"]),
                          "; ".join(p["problems"]))
        console.print(table)

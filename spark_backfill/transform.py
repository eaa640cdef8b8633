"""Transform: source records -> sequenced domain records, with exactly the live service's rules.

DataFrame -> DataFrame functions, testable on actual rows (only `translate_kafka`'s tasks do I/O: they read
their Kafka offsets):

- `translate_source`: `mapInArrow` calling `shared.translation.translate` and `shared.routing.route` per record
  (the same calls the live ACL makes), and encoding each event's Avro halves (`shared.avro.SplitEncoder`);
  `translate_kafka`: the same translation of a Kafka snapshot that the Python workers read themselves
  (`kafka_ranges`);
- `for_numbering` + `number_sorted`: the backfill's numbering: each output key's rows in one partition sorted in
  source order (one shuffle, a sort within partitions), numbered densely in the same pass as the write, upstream
  duplicates by dedupe id dropped (first in source order wins): `shared.sequencing.assign_sequences`;
  `output_record` is what a numbered row writes, `TaskTally` what a write task counts;
- `sequence_events`: the same numbering with Spark windows, for `rekey verify`'s expected side;
- `last_row_ids` / `checkpoint_row_rows`: the ids of every CDC row's last translated change, for the live ACL's
  deletes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_rekey.shared.avro import stamp_sequence
from kafka_rekey.shared.pipeline import sequence_headers

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from kafka_rekey.services.settings import RegistrySettings
    from kafka_rekey.shared.handoff import OffsetRange
    from kafka_rekey.shared.translation import SourceRecord, Translation

EVENT, SKIP, POISON, DUPLICATE = "event", "skip", "poison", "duplicate"
SERVICE = "backfill"
# `shared.sequencing.source_order`: ordering token, then source partition, offset and topic.
ORDER_COLUMNS = ("ordering_token", "src_partition", "src_offset", "src_topic")
SEQUENCE_KEY_COLUMNS = ("out_topic", "out_key")


def translated_schema(columns: Sequence[str] | None = None) -> Any:
    """The translated rows' columns, or only `columns` of them in this order (see `TranslateSpec.columns`)."""
    from pyspark.sql import types as T

    header = T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
    schema = T.StructType([
        T.StructField("kind", T.StringType(), False),
        T.StructField("reason", T.StringType()),
        T.StructField("src_topic", T.StringType(), False),
        T.StructField("src_partition", T.IntegerType(), False),
        T.StructField("src_offset", T.LongType(), False),
        T.StructField("src", T.StringType(), False),
        T.StructField("org_id", T.StringType()),
        T.StructField("out_topic", T.StringType()),
        T.StructField("out_key", T.StringType()),
        T.StructField("out_partition", T.IntegerType()),
        T.StructField("ordering_token", T.LongType()),
        T.StructField("dedupe_id", T.StringType()),
        T.StructField("event_id", T.StringType()),
        T.StructField("event_time_ms", T.LongType()),
        T.StructField("head", T.BinaryType()),
        T.StructField("tail", T.BinaryType()),
        T.StructField("dlq_key", T.BinaryType()),
        T.StructField("dlq_value", T.BinaryType()),
        T.StructField("dlq_headers", T.ArrayType(header)),
        # What a CDC source's change teaches a `RowMemory` (`shared.translation.ids_to_remember`): the row
        # (`row_key` of the record key) and its ids; null for other sources and for skips and poison pills.
        T.StructField("row_key", T.BinaryType()),
        T.StructField("row_org_id", T.StringType()),
        T.StructField("row_interaction_id", T.StringType()),
    ])
    if columns is None:
        return schema
    return T.StructType([schema[name] for name in columns])


@dataclass(frozen=True)
class TranslateSpec:
    """What executors need to translate and route: the catalog text (parsed once per Python worker), the
    family, and the source format of every source topic read."""

    catalog_text: str
    catalog_source: str
    family: str
    formats: Mapping[str, Translation]
    service_version: str = "0.1.0"
    encode: bool = True
    wire: Mapping[str, bytes] = field(default_factory=dict)
    """Each output topic's Confluent wire header, put in front of every head (none: bare heads)."""
    registry: RegistrySettings | None = None
    """Where executors look up the writer schemas of Avro source values (Debezium's Avro converter)."""
    columns: tuple[str, ...] | None = None
    """The `translated_schema` columns to return (all when None): what is not read later never crosses into the
    JVM."""

    @property
    def cache_key(self) -> str:
        wire = "".join(f"{topic}={header.hex()}" for topic, header in sorted(self.wire.items()))
        return hashlib.sha1((self.catalog_text + wire).encode()).hexdigest() + self.family


# Per Python worker (spark.python.worker.reuse): the parsed catalog and record pipeline, built once.
_WORKER_STATE: dict[str, Any] = {}


def _pipeline(spec: TranslateSpec) -> Any:
    pipeline = _WORKER_STATE.get(spec.cache_key)
    if pipeline is None:
        from kafka_rekey.shared.catalog import parse_catalog
        from kafka_rekey.shared.pipeline import RecordPipeline

        catalog = parse_catalog(spec.catalog_text, spec.catalog_source)
        pipeline = _WORKER_STATE[spec.cache_key] = RecordPipeline(catalog, SERVICE, spec.service_version,
                                                                 spec.wire, spec.encode, _avro_values(spec))
    return pipeline


def _avro_values(spec: TranslateSpec) -> Any:
    if spec.registry is None:
        return None
    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.shared.translation import AvroValues

    return AvroValues(SchemaRegistryClient(spec.registry).writer_schema_text)


class _Translator:
    """One task's translation: source records -> an Arrow batch of translated rows (event, skip or poison), built
    column by column."""

    def __init__(self, spec: TranslateSpec) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        from kafka_rekey.shared.translation import RememberedRows, remembers_rows

        self.spec = spec
        pipeline = _pipeline(spec)
        # A Kafka partition's offset range is read in order by one task: a CDC row's delete follows its earlier
        # changes there, whose ids it may need.
        self.remembered = RememberedRows()
        self.remembering = {topic for topic, translation in spec.formats.items() if remembers_rows(translation)}
        self.processors = {topic: pipeline.processor(translation, (spec.family,),
                                                     self.remembered if topic in self.remembering else None)
                           for topic, translation in spec.formats.items()}
        self.every_name = translated_schema().fieldNames()
        self.arrow_schema = to_arrow_schema(translated_schema(spec.columns))

    def batch(self, records: Sequence[SourceRecord]) -> pa.RecordBatch:
        import pyarrow as pa

        from kafka_rekey.shared.pipeline import DeadLetter, Routed
        from kafka_rekey.shared.translation import ids_to_remember

        spec, remembering, processors = self.spec, self.remembering, self.processors
        count = len(records)
        out: dict[str, list[Any]] = {name: [None] * count for name in self.every_name}
        kind, reason, src_topic, src_partition, src_offset, src = (
            out["kind"], out["reason"], out["src_topic"], out["src_partition"], out["src_offset"], out["src"])
        for i, record in enumerate(records):
            topic, partition, offset = record.topic, record.partition, record.offset
            result = processors[topic](record)
            src_topic[i], src_partition[i], src_offset[i] = topic, partition, offset
            if isinstance(result, Routed):
                draft, (domain,) = result.draft, result.records
                learned = ids_to_remember(record, draft) if topic in remembering else None
                if learned is not None:  # `RememberedRows.learn`, keeping the row for the hand-off
                    learned_key, row_ids = learned
                    out["row_key"][i] = learned_key
                    out["row_org_id"][i], out["row_interaction_id"][i] = row_ids
                    self.remembered.ids[(topic, learned_key)] = row_ids
                target = domain.route
                kind[i], src[i] = EVENT, domain.src
                out["org_id"][i], out["out_topic"][i] = draft.org_id, target.topic
                out["out_key"][i], out["out_partition"][i] = target.key, target.partition
                out["ordering_token"][i], out["dedupe_id"][i] = draft.ordering_token, draft.dedupe_id
                out["event_id"][i], out["event_time_ms"][i] = draft.event_id, draft.event_time_ms
                if spec.encode:
                    out["head"][i], out["tail"][i] = domain.head, domain.tail
            elif isinstance(result, DeadLetter):
                kind[i], reason[i], src[i] = POISON, str(result.pill.reason_code), f"{topic}/{partition}/{offset}"
                out["dlq_key"][i], out["dlq_value"][i] = result.key, result.value
                out["dlq_headers"][i] = [{"key": k, "value": v} for k, v in result.headers]
            else:
                kind[i], reason[i], src[i] = SKIP, str(result.reason), f"{topic}/{partition}/{offset}"
        schema = self.arrow_schema
        return pa.RecordBatch.from_arrays([pa.array(out[name], type=schema.field(name).type)
                                           for name in schema.names], schema=schema)


def translate_batches(spec: TranslateSpec) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function over source rows (`extract.SOURCE_COLUMNS`): one translated row per source row."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from kafka_rekey.shared.translation import SourceRecord

        translator = _Translator(spec)
        for batch in batches:
            rows = zip(*(batch.column(name).to_pylist() for name in
                         ("topic", "partition", "offset", "key", "value", "timestamp_ms", "headers")), strict=True)
            yield translator.batch([SourceRecord(topic=topic, partition=partition, offset=offset, key=key,
                                                 value=value, headers=_headers(raw_headers),
                                                 timestamp_ms=timestamp_ms)
                                    for topic, partition, offset, key, value, timestamp_ms, raw_headers in rows])

    return run


def translate_splits(spec: TranslateSpec, config: Mapping[str, Any],
                     batch_size: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function over `kafka_ranges.SPLIT_COLUMNS` rows: each split's records read with
    confluent-kafka in this worker and translated, `batch_size` records per output batch."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from kafka_rekey.spark_backfill.kafka_ranges import Split, read_split

        translator = _Translator(spec)
        for batch in batches:
            for topic, partition, start, end in zip(*(batch.column(name).to_pylist() for name in
                                                      ("topic", "partition", "start", "end")), strict=True):
                for records in read_split(config, Split(topic, partition, start, end), batch_size):
                    yield translator.batch(records)

    return run


def _headers(raw: list[dict[str, Any]] | None) -> dict[str, bytes]:
    if not raw:
        return {}
    return {str(h["key"]): h["value"] if h["value"] is not None else b"" for h in raw}


def translate_source(source: DataFrame, spec: TranslateSpec) -> DataFrame:
    """Every source row translated and routed (see `translated_schema`; only `spec.columns` when given)."""
    return source.mapInArrow(translate_batches(spec), translated_schema(spec.columns))  # type: ignore[arg-type]


def translate_kafka(spark: SparkSession, config: Mapping[str, Any], ranges: Sequence[OffsetRange],
                    spec: TranslateSpec, batch_size: int) -> DataFrame:
    """Every record of the topics' `ranges`, read in the Python workers (`kafka_ranges`) and translated as
    `translate_source` translates. A partition is cut into chunks for the cores unless a source remembers rows
    (its changes must be read in order by one task)."""
    from kafka_rekey.shared.translation import remembers_rows
    from kafka_rekey.spark_backfill.kafka_ranges import splits, splits_frame

    whole = any(remembers_rows(translation) for translation in spec.formats.values())
    parts = splits(ranges, spark.sparkContext.defaultParallelism, whole_partitions=whole)
    return splits_frame(spark, parts).mapInArrow(translate_splits(spec, config, batch_size),  # type: ignore[arg-type]
                                                 translated_schema(spec.columns))


def sequence_events(events: DataFrame, start_after: DataFrame | None = None,
                    partitions: int | None = None) -> DataFrame:
    """Dense per-key sequences in source order, upstream duplicates dropped (first in source order wins).

    `events` needs `out_topic`, `out_key`, `dedupe_id` and the `ORDER_COLUMNS`; `start_after` (optional)
    has `out_topic`, `out_key`, `last`: numbering continues after `last` (a previous hand-off). One shuffle:
    both windows are partitioned by the sequence key (the dedupe window by a superset of it).

    With a `kind` column, every row passes through: upstream duplicates become kind `duplicate`, and they,
    poison pills and skips keep a null sequence, so one pass over the translated rows feeds the domain topics,
    the DLQ and every count.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = [F.col(name).asc() for name in ORDER_COLUMNS]
    keys = list(SEQUENCE_KEY_COLUMNS)
    first_seen = Window.partitionBy(*keys, "dedupe_id").orderBy(*order)
    spread = events.repartition(partitions, *keys) if partitions else events.repartition(*keys)
    numbered = spread.withColumn("_occurrence", F.row_number().over(first_seen))
    if "kind" in events.columns:
        # Keep every row: later copies of a dedupe id become `duplicate`s (counted, never written).
        numbered = numbered.withColumn("kind", F.when((F.col("kind") == EVENT) & (F.col("_occurrence") > 1),
                                                      F.lit(DUPLICATE)).otherwise(F.col("kind")))
        is_event = F.col("kind") == EVENT
    else:
        numbered = numbered.filter(F.col("_occurrence") == 1)
        is_event = F.lit(True)
    # Events first (false sorts before true), so they number 1..n among themselves in source order.
    in_order = Window.partitionBy(*keys).orderBy((~is_event).asc(), *order)
    numbered = (numbered.drop("_occurrence")
                .withColumn("sequence", F.when(is_event, F.row_number().over(in_order).cast("long"))))
    if start_after is None:
        return numbered
    return (numbered.join(start_after.select(*keys, F.col("last").cast("long").alias("_last")), keys, "left")
            .withColumn("sequence", F.col("sequence") + F.coalesce(F.col("_last"), F.lit(0).cast("long")))
            .drop("_last"))


def for_numbering(translated: DataFrame, partitions: int, start_after: DataFrame | None = None) -> DataFrame:
    """`translated` as `number_sorted` reads it: every output key's rows in one of `partitions` partitions, sorted by
    key and then source order, with `start` (the key's last sequence of a previous hand-off, `start_after`'s
    `last`, or null). One shuffle and a sort within each partition, no global window. Rows without a key (poison
    pills, skips) are spread by source position. The same rows land in the same partition on every run of the same
    snapshot, which a resumed run's per-task completion markers rely on."""
    from pyspark.sql import functions as F

    keys = list(SEQUENCE_KEY_COLUMNS)
    if start_after is None:
        frame = translated.withColumn("start", F.lit(None).cast("long"))
    else:
        frame = translated.join(start_after.select(*keys, F.col("last").cast("long").alias("start")), keys, "left")
    spread = F.when(F.col("out_key").isNotNull(), F.concat_ws("/", *keys)).otherwise(F.col("src"))
    # Only what the write step reads and the sort needs goes through the shuffle.
    needed = [*WRITE_COLUMNS, *(c for c in ORDER_COLUMNS if c not in WRITE_COLUMNS)]
    return (frame.select(*needed).repartition(partitions, spread).sortWithinPartitions(*keys, *ORDER_COLUMNS)
            .select(*WRITE_COLUMNS))


# What the write step reads of each row, in this order (`number_sorted` reads the first five).
WRITE_COLUMNS = ("kind", "out_topic", "out_key", "dedupe_id", "start", "reason", "out_partition", "head", "tail",
                 "src", "dlq_key", "dlq_value", "dlq_headers")
_KIND, _TOPIC, _KEY, _DEDUPE, _START, _REASON, _PARTITION, _HEAD, _TAIL, _SRC, _DLQ_KEY, _DLQ_VALUE, _DLQ_HEADERS = (
    range(len(WRITE_COLUMNS)))
# What `last_row_ids` reads.
ROW_ID_COLUMNS = ("src_topic", "src_partition", "src_offset", "row_key", "row_org_id", "row_interaction_id")


def backfill_columns(row_ids: bool) -> tuple[str, ...]:
    """The translated columns the backfill reads: `for_numbering`'s, and `last_row_ids`' when `row_ids`."""
    wanted = [*(c for c in WRITE_COLUMNS if c != "start"), *ORDER_COLUMNS, *(ROW_ID_COLUMNS if row_ids else ())]
    return tuple(dict.fromkeys(wanted))


def write_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[Any, ...]]:
    """The `WRITE_COLUMNS` tuples of `for_numbering`'s Arrow batches, in order."""
    for batch in batches:
        yield from zip(*(batch.column(name).to_pylist() for name in WRITE_COLUMNS), strict=True)


def number_sorted(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[tuple[Any, ...], str, int | None]]:
    """(row, kind, sequence) for rows (`WRITE_COLUMNS` tuples) sorted as `for_numbering` sorts them: each key's
    events numbered densely in source order after its `start`, later copies of a dedupe id `duplicate`
    (`shared.sequencing.assign_sequences`); other rows pass through unnumbered."""
    current: tuple[str, str] | None = None
    last, seen = 0, set[Any]()
    for row in rows:
        if row[_KIND] != EVENT:
            yield row, row[_KIND], None
            continue
        if (row[_TOPIC], row[_KEY]) != current:
            current, last, seen = (row[_TOPIC], row[_KEY]), row[_START] or 0, set()
        if row[_DEDUPE] in seen:
            yield row, DUPLICATE, None
            continue
        seen.add(row[_DEDUPE])
        last += 1
        yield row, EVENT, last


def output_record(row: tuple[Any, ...], kind: str, sequence: int | None, dlq_topic: str) -> OutputRecord | None:
    """What a numbered row writes, exactly as the live service does: an event to its Java-parity partition, key =
    output key (UTF-8), value = Avro wire format, headers `seq` then `src`; a poison pill to the DLQ with its
    original key, value and headers plus `dlq.*` (no partition: the producer's murmur2 places it by its key, as
    the live service's are); nothing for a skip or an upstream duplicate."""
    if kind == EVENT and sequence is not None:
        return OutputRecord(row[_TOPIC], row[_PARTITION], row[_KEY].encode(),
                            stamp_sequence(row[_HEAD], sequence, row[_TAIL]), sequence_headers(sequence, row[_SRC]))
    if kind == POISON:
        return OutputRecord(dlq_topic, None, row[_DLQ_KEY], row[_DLQ_VALUE],
                            [(h["key"], h["value"]) for h in row[_DLQ_HEADERS] or ()])
    return None


class OutputRecord(NamedTuple):
    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]


@dataclass
class TaskTally:
    """What one write task's rows came to: rows by (kind, reason, output topic), keys numbered from 1, events
    written and each key's last sequence (its hand-off record)."""

    counts: Counter[tuple[str, str | None, str | None]] = field(default_factory=Counter)
    keys: int = 0
    written: int = 0
    lasts: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, row: tuple[Any, ...], kind: str, sequence: int | None) -> None:
        if sequence is not None:
            self.counts[(EVENT, None, row[_TOPIC])] += 1
            self.written += 1
            self.keys += sequence == 1
            self.lasts[(row[_TOPIC], row[_KEY])] = sequence
        else:
            self.counts[(kind, row[_REASON], row[_TOPIC] if kind == DUPLICATE else None)] += 1

    def summary(self) -> dict[str, Any]:
        """The task's marker value: everything but the last sequences (written as records of their own)."""
        return {"counts": [[*key, n] for key, n in sorted(self.counts.items(), key=str)], "keys": self.keys,
                "written": self.written}


def last_row_ids(translated: DataFrame) -> DataFrame:
    """(src_topic, row_key, org_id, interaction_id): the ids of every CDC row's last translated change, by source
    offset (a row's changes share its partition: Debezium keys them by the primary key). `translated` needs the
    `translated_schema` columns `src_topic`, `src_partition`, `src_offset`, `row_key`, `row_org_id`,
    `row_interaction_id`; rows without a `row_key` teach nothing. What the hand-off gives the live ACL."""
    from pyspark.sql import functions as F

    last = F.max(F.struct("src_offset", "src_partition", "row_org_id", "row_interaction_id"))
    return (translated.filter(F.col("row_key").isNotNull())
            .groupBy("src_topic", "row_key").agg(last.alias("_last"))
            .select("src_topic", "row_key", F.col("_last.row_org_id").alias("org_id"),
                    F.col("_last.row_interaction_id").alias("interaction_id")))


def _checkpoint_rows(frame: DataFrame, columns: tuple[str, ...], record: Callable[..., tuple[bytes, bytes]],
                     checkpoint_topic: str) -> DataFrame:
    """`record(*columns)` of every row of `frame`, as Kafka sink rows (topic, key, value) of the checkpoint."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("key", T.BinaryType()), T.StructField("value", T.BinaryType())])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for batch in batches:
            records = [record(*values) for values in zip(*(batch.column(c).to_pylist() for c in columns),
                                                         strict=True)]
            yield pa.RecordBatch.from_pydict({"key": [r[0] for r in records], "value": [r[1] for r in records]},
                                             schema=pa.schema([("key", pa.binary()), ("value", pa.binary())]))

    return frame.mapInArrow(run, schema).select(F.lit(checkpoint_topic).alias("topic"), "key", "value")  # type: ignore[arg-type]


def checkpoint_row_rows(row_ids: DataFrame, checkpoint_topic: str) -> DataFrame:
    """`shared.handoff.row_record` of every (src_topic, row_key, org_id, interaction_id) (`last_row_ids`), as
    Kafka sink rows."""
    from kafka_rekey.shared.handoff import row_record

    return _checkpoint_rows(row_ids, ("src_topic", "row_key", "org_id", "interaction_id"), row_record,
                            checkpoint_topic)

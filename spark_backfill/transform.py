"""Transform: source records -> sequenced domain records, with exactly the live service's rules.

Pure DataFrame -> DataFrame functions (no I/O), testable on actual rows:

- `translate_source`: `mapInArrow` calling `shared.translation.translate` and `shared.routing.route` per record
  (the same calls the live ACL makes), and encoding each event's Avro halves (`shared.avro.SplitEncoder`);
- `sequence_events`: drop upstream duplicates by dedupe id (first in source order wins) and number each output
  key densely in source order with Spark windows, exactly `shared.sequencing.assign_sequences`;
- `last_row_ids`: the ids of every CDC row's last translated change, for the live ACL's deletes;
- `kafka_rows` / `dead_letter_rows` / `checkpoint_sequence_rows` / `checkpoint_row_rows`: what the load step
  writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

    from services.settings import RegistrySettings
    from shared.translation import Translation

EVENT, SKIP, POISON, DUPLICATE = "event", "skip", "poison", "duplicate"
SERVICE = "backfill"
# `shared.sequencing.source_order`: ordering token, then source partition, offset and topic.
ORDER_COLUMNS = ("ordering_token", "src_partition", "src_offset", "src_topic")
SEQUENCE_KEY_COLUMNS = ("out_topic", "out_key")


def translated_schema() -> Any:
    from pyspark.sql import types as T

    header = T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
    return T.StructType([
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
    registry: RegistrySettings | None = None
    """Where executors look up the writer schemas of Avro source values (Debezium's Avro converter)."""

    @property
    def cache_key(self) -> str:
        return hashlib.sha1(self.catalog_text.encode()).hexdigest() + self.family


# Per Python worker (spark.python.worker.reuse): the parsed catalog and record pipeline, built once.
_WORKER_STATE: dict[str, Any] = {}


def _pipeline(spec: TranslateSpec) -> Any:
    pipeline = _WORKER_STATE.get(spec.cache_key)
    if pipeline is None:
        from shared.catalog import parse_catalog
        from shared.pipeline import RecordPipeline

        catalog = parse_catalog(spec.catalog_text, spec.catalog_source)
        pipeline = _WORKER_STATE[spec.cache_key] = RecordPipeline(catalog, SERVICE, spec.service_version,
                                                                 encode=spec.encode, avro=_avro_values(spec))
    return pipeline


def _avro_values(spec: TranslateSpec) -> Any:
    if spec.registry is None:
        return None
    from services.registry.client import SchemaRegistryClient
    from shared.translation import AvroValues

    return AvroValues(SchemaRegistryClient(spec.registry).writer_schema_text)


def translate_batches(spec: TranslateSpec) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function: one output row per source row (event, skip or poison)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from shared.pipeline import DeadLetter, Routed
        from shared.translation import RememberedRows, SourceRecord, ids_to_remember, remembers_rows

        pipeline = _pipeline(spec)
        # A Kafka partition's offset range is read in order by one task: a CDC row's delete follows its earlier
        # changes there, whose ids it may need.
        remembered = RememberedRows()
        remembering = {topic for topic, translation in spec.formats.items() if remembers_rows(translation)}
        processors = {topic: pipeline.processor(translation, (spec.family,),
                                                remembered if topic in remembering else None)
                      for topic, translation in spec.formats.items()}
        arrow_schema = to_arrow_schema(translated_schema())
        columns = arrow_schema.names
        for batch in batches:
            out: dict[str, list[Any]] = {name: [] for name in columns}
            rows = zip(*(batch.column(name).to_pylist() for name in
                         ("topic", "partition", "offset", "key", "value", "timestamp_ms", "headers")), strict=True)
            for topic, partition, offset, key, value, timestamp_ms, raw_headers in rows:
                record = SourceRecord(topic=topic, partition=partition, offset=offset, key=key, value=value,
                                      headers=_headers(raw_headers), timestamp_ms=timestamp_ms)
                result = processors[record.topic](record)
                row: dict[str, Any] = dict.fromkeys(columns)
                row.update(src_topic=record.topic, src_partition=record.partition, src_offset=record.offset,
                           src=f"{record.topic}/{record.partition}/{record.offset}")
                if isinstance(result, Routed):
                    draft, (domain,) = result.draft, result.records
                    learned = ids_to_remember(record, draft) if record.topic in remembering else None
                    if learned is not None:  # `RememberedRows.learn`, keeping the row for the hand-off
                        row_ids = learned[1]
                        row["row_key"] = learned_key = learned[0]
                        row["row_org_id"], row["row_interaction_id"] = row_ids
                        remembered.ids[(record.topic, learned_key)] = row_ids
                    target = domain.route
                    row.update(kind=EVENT, org_id=draft.org_id, out_topic=target.topic, out_key=target.key,
                               out_partition=target.partition, ordering_token=draft.ordering_token,
                               dedupe_id=draft.dedupe_id, event_id=draft.event_id,
                               event_time_ms=draft.event_time_ms, src=domain.src)
                    if spec.encode:  # bare heads: the load step's JVM adds the wire header
                        row["head"], row["tail"] = domain.head, domain.tail
                elif isinstance(result, DeadLetter):
                    row.update(kind=POISON, reason=str(result.pill.reason_code), dlq_key=result.key,
                               dlq_value=result.value, dlq_headers=[{"key": k, "value": v} for k, v in result.headers])
                else:
                    row.update(kind=SKIP, reason=str(result.reason))
                for name in columns:
                    out[name].append(row[name])
            yield pa.RecordBatch.from_pydict(out, schema=arrow_schema)

    return run


def _headers(raw: list[dict[str, Any]] | None) -> dict[str, bytes]:
    if not raw:
        return {}
    return {str(h["key"]): h["value"] if h["value"] is not None else b"" for h in raw}


def translate_source(source: DataFrame, spec: TranslateSpec) -> DataFrame:
    """Every source row translated and routed (see `translated_schema`)."""
    return source.mapInArrow(translate_batches(spec), translated_schema())  # type: ignore[arg-type]


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


def value_column(wire_headers: Mapping[str, bytes]) -> Column:
    """The framed Avro value: wire header of the record's topic + head + varint(sequence) + tail."""
    from pyspark.sql import functions as F

    from spark_backfill.encoding import varint_column

    pairs = [item for topic, header in sorted(wire_headers.items()) for item in (F.lit(topic), F.lit(header))]
    header = F.create_map(*pairs)[F.col("out_topic")]
    return F.concat(header, F.col("head"), varint_column(F.col("sequence")), F.col("tail"))


def kafka_rows(sequenced: DataFrame, wire_headers: Mapping[str, bytes]) -> DataFrame:
    """Rows for Spark's Kafka sink, exactly as the live service writes them: explicit Java-parity partition,
    key = output key (UTF-8), value = Avro wire format, headers `seq` (decimal) then `src` (topic/partition/offset)."""
    from pyspark.sql import functions as F

    headers = F.array(
        F.struct(F.lit("seq").alias("key"), F.encode(F.col("sequence").cast("string"), "UTF-8").alias("value")),
        F.struct(F.lit("src").alias("key"), F.encode(F.col("src"), "UTF-8").alias("value")),
    )
    return sequenced.select(
        F.col("out_topic").alias("topic"),
        F.col("out_partition").alias("partition"),
        F.encode(F.col("out_key"), "UTF-8").alias("key"),
        value_column(wire_headers).alias("value"),
        headers.alias("headers"),
    )


def dead_letter_rows(poison: DataFrame, dlq_topic: str) -> DataFrame:
    """Poison pills for the DLQ: original key and value bytes, original headers plus `dlq.*` context headers.
    No partition: the producer's murmur2 partitioner places them by original key, as the live service's do."""
    from pyspark.sql import functions as F

    return poison.select(
        F.lit(dlq_topic).alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        F.col("dlq_key").alias("key"),
        F.col("dlq_value").alias("value"),
        F.col("dlq_headers").alias("headers"),
    )


def last_sequences(sequenced: DataFrame) -> DataFrame:
    """(out_topic, out_key, last): the hand-off value of every sequence key."""
    from pyspark.sql import functions as F

    return sequenced.groupBy(*SEQUENCE_KEY_COLUMNS).agg(F.max("sequence").alias("last"))


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


def checkpoint_sequence_rows(last: DataFrame, checkpoint_topic: str) -> DataFrame:
    """`shared.handoff.sequence_record` of every (out_topic, out_key, last), as Kafka sink rows."""
    from shared.handoff import sequence_record

    def record(topic: str, key: str, last_sequence: int) -> tuple[bytes, bytes]:
        return sequence_record(topic, key, int(last_sequence))

    return _checkpoint_rows(last, ("out_topic", "out_key", "last"), record, checkpoint_topic)


def checkpoint_row_rows(row_ids: DataFrame, checkpoint_topic: str) -> DataFrame:
    """`shared.handoff.row_record` of every (src_topic, row_key, org_id, interaction_id) (`last_row_ids`), as
    Kafka sink rows."""
    from shared.handoff import row_record

    return _checkpoint_rows(row_ids, ("src_topic", "row_key", "org_id", "interaction_id"), row_record,
                            checkpoint_topic)

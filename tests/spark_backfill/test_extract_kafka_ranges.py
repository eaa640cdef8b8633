"""The Python workers' Kafka read (`kafka_ranges`) gives the records Spark's JVM Kafka source gives for the same
offsets: keys, values, headers, timestamps, aborted transactions skipped, a range ending mid-partition, an empty
range, several partitions read by one consumer; and the backfill's translation of it equals the translation of the
JVM read."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.handoff import OffsetRange
from kafka_rekey.spark_backfill import transform
from kafka_rekey.spark_backfill.extract import snapshot, spark_kafka_options
from kafka_rekey.spark_backfill.kafka_ranges import Split, group_splits, read_split, read_splits, splits

pytestmark = pytest.mark.spark

CATALOG = Path(__file__).resolve().parents[2] / "catalog" / "topics.yaml"
# Recent: the broker deletes records older than its retention.
BASE_MS = int(time.time() * 1000) - 60_000


def _event(i: int) -> bytes:
    return json.dumps({"orgId": f"org-{i % 3}", "interactionId": f"i-{i % 5}", "eventId": f"e-{i}",
                       "eventType": "start", "interactionType": "call", "timestamp": "2024-01-01T00:00:00Z",
                       "data": {"agentId": "a-1"}}).encode()


def _fill(bootstrap: str, topic: str) -> None:
    """Partition 0: a committed transaction of 6 records (headers, timestamps, a null key, a tombstone, a poison
    pill), an aborted one of 3, a committed one of 2; partition 1: one committed transaction of 2."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"fill-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    values: list[bytes | None] = [_event(0), _event(1), None, b"{not json", _event(4), _event(5)]
    producer.begin_transaction()
    for i, value in enumerate(values):
        producer.produce(topic, value, None if i == 1 else f"k-{i}".encode(), 0, timestamp=BASE_MS + i,
                         headers=[("trace", f"t-{i}".encode()), ("empty", None)] if i % 2 == 0 else None)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for _ in range(3):
        producer.produce(topic, b"aborted", b"x", 0)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in (10, 11):
        producer.produce(topic, _event(i), f"k-{i}".encode(), 0, timestamp=BASE_MS + i)
        producer.produce(topic, _event(i + 10), f"k-{i + 10}".encode(), 1)
    producer.commit_transaction(30)


def _jvm_read(spark, bootstrap: str, offsets: OffsetRange):  # type: ignore[no-untyped-def]
    """The reference read: exactly `offsets`, read_committed, by Spark's JVM Kafka source, as `SOURCE_COLUMNS`."""
    from pyspark.sql import functions as F

    def per_partition(where: dict[int, int]) -> str:
        return json.dumps({offsets.topic: {str(p): o for p, o in sorted(where.items())}})

    return (spark.read.format("kafka").options(**spark_kafka_options(KafkaSettings(bootstrap_servers=bootstrap)))
            .option("assign", json.dumps({offsets.topic: sorted(offsets.end)})).option("includeHeaders", "true")
            .option("kafka.isolation.level", "read_committed").option("failOnDataLoss", "true")
            .option("startingOffsets", per_partition(offsets.start)).option("endingOffsets", per_partition(offsets.end))
            .load()
            .select("topic", "partition", "offset", "key", "value",
                    F.unix_millis(F.col("timestamp")).alias("timestamp_ms"), "headers"))


def _jvm_rows(spark, bootstrap: str, offsets: OffsetRange) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    rows = _jvm_read(spark, bootstrap, offsets).collect()
    return sorted((r["topic"], r["partition"], r["offset"], r["key"] and bytes(r["key"]),
                   r["value"] and bytes(r["value"]), r["timestamp_ms"],
                   {h["key"]: bytes(h["value"]) if h["value"] is not None else b"" for h in r["headers"] or ()})
                  for r in rows)


def _python_rows(bootstrap: str, parts: list[Split]) -> list[tuple[object, ...]]:
    config = {"bootstrap.servers": bootstrap}
    return sorted((r.topic, r.partition, r.offset, r.key, r.value, r.timestamp_ms, dict(r.headers))
                  for part in parts for batch in read_split(config, part, 4) for r in batch)


def test_the_python_read_gives_the_jvm_reads_records(spark, kafka_bootstrap: str,  # type: ignore[no-untyped-def]
                                                     topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=2, prefix="ranges")
    _fill(kafka_bootstrap, topic)
    whole = snapshot({"bootstrap.servers": kafka_bootstrap}, topic)
    assert whole.end == {0: 14, 1: 3}  # 6 + marker, 3 aborted + marker, 2 + marker; 2 + marker

    expected = _jvm_rows(spark, kafka_bootstrap, whole)
    got = _python_rows(kafka_bootstrap, splits([whole], 3, whole_partitions=False))
    assert got == expected
    assert [r[2] for r in got if r[1] == 0] == [0, 1, 2, 3, 4, 5, 11, 12]  # markers 6, 10, 13; aborted 7-9
    assert got[0][3:] == (b"k-0", _event(0), BASE_MS, {"trace": b"t-0", "empty": b""})
    assert got[1][3] is None and got[2][4] is None
    # One consumer for a group (`rekey verify`'s target): the same records, one partition's range ending mid-log.
    group = [Split(topic, 0, 2, 5), Split(topic, 1, 0, 3)]
    assert sorted((r.topic, r.partition, r.offset, r.key, r.value, r.timestamp_ms, dict(r.headers))
                  for batch in read_splits({"bootstrap.servers": kafka_bootstrap}, group, 100) for r in batch) == [
        row for row in got if row[1] == 1 or 2 <= row[2] < 5]  # type: ignore[operator]

    middle = OffsetRange(topic, {0: 2}, {0: 5})
    assert _python_rows(kafka_bootstrap, splits([middle], 1, False)) == _jvm_rows(spark, kafka_bootstrap, middle)
    assert [r[2] for r in _python_rows(kafka_bootstrap, [Split(topic, 0, 2, 5)])] == [2, 3, 4]
    # Ends inside the aborted records and on a marker: the read stops without a record to see there.
    assert [r[2] for r in _python_rows(kafka_bootstrap, [Split(topic, 0, 4, 9)])] == [4, 5]
    assert _python_rows(kafka_bootstrap, [Split(topic, 0, 6, 10)]) == []
    assert _python_rows(kafka_bootstrap, [Split(topic, 0, 3, 3)]) == []

    from kafka_rekey.services.catalog_files import load_catalog

    spec = transform.TranslateSpec(CATALOG.read_text(), str(CATALOG), load_catalog(CATALOG).default_family,
                                   {topic: "ccaas-json"})

    jvm = transform.translate_source(_jvm_read(spark, kafka_bootstrap, whole),
                                     spec).collect()
    python = transform.translate_kafka(spark, {"bootstrap.servers": kafka_bootstrap}, [whole], spec, 4).collect()
    assert sorted(map(tuple, python)) == sorted(map(tuple, jvm))
    assert {r["kind"] for r in python} == {"event", "skip", "poison"}


def test_splits_cut_large_partitions_for_the_cores_unless_whole() -> None:
    ranges = [OffsetRange("a", {0: 0, 1: 10, 2: 5}, {0: 100, 1: 30, 2: 5}), OffsetRange("b", {0: 0}, {0: 20})]
    cut = splits(ranges, 4, whole_partitions=False)  # 140 records: chunks of up to 35
    assert cut == [Split("a", 0, 0, 34), Split("a", 0, 34, 68), Split("a", 0, 68, 100), Split("a", 1, 10, 30),
                   Split("b", 0, 0, 20)]
    assert splits(ranges, 4, whole_partitions=True) == [Split("a", 0, 0, 100), Split("a", 1, 10, 30),
                                                        Split("b", 0, 0, 20)]
    assert splits([OffsetRange("a", {0: 5}, {0: 5})], 2, False) == []


def test_groups_pack_small_partitions_for_one_consumer_and_never_two_chunks_of_one() -> None:
    ranges = [OffsetRange("a", {p: 0 for p in range(6)}, {p: 10 for p in range(6)}),
              OffsetRange("b", {0: 0}, {0: 140})]
    parts = splits(ranges, 4, whole_partitions=False)  # 200 records: parts of 50, b/0 in chunks of 47
    assert group_splits(parts, 4) == [[Split("a", p, 0, 10) for p in range(5)],
                                      [Split("a", 5, 0, 10)], [Split("b", 0, 0, 47)], [Split("b", 0, 47, 94)],
                                      [Split("b", 0, 94, 140)]]
    assert group_splits([Split("a", 0, 0, 1), Split("a", 0, 1, 2)], 1) == [[Split("a", 0, 0, 1)],
                                                                          [Split("a", 0, 1, 2)]]
    assert group_splits([], 2) == []

"""A Kafka snapshot read inside the Python workers: offset-range splits, each read with confluent-kafka.

The backfill translates a topic's records in the same Python worker that reads them, so no JVM Kafka read and no
Arrow hop into Python stand between the broker and `shared`: the job's DataFrame is one row per `Split`
(topic, partition, [start, end)), one split per Spark partition, and each task assigns its split and consumes
exactly its offsets, read_committed (records of aborted transactions were never written), in batches.
`rekey verify` reads its target the same way, a group of small partitions per Spark partition and consumer.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafka_rekey.shared.translation import SourceRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_rekey.shared.handoff import OffsetRange

SPLIT_COLUMNS = ("topic", "partition", "start", "end")
# Records per consume and per translated Arrow batch: `spark.sql.execution.arrow.maxRecordsPerBatch`'s size.
READ_BATCH = 5000
# Above a broker's longest pause (a leader change, a log roll): a read making no progress this long has failed.
STALL_SECONDS = 120.0
CONSUMER_SETTINGS = {
    "enable.auto.commit": False,
    "enable.partition.eof": False,
    "isolation.level": "read_committed",
    # A start offset the log no longer holds is data loss: fail, never skip to another offset.
    "auto.offset.reset": "error",
    "fetch.max.bytes": 52428800,
    "queued.max.messages.kbytes": 65536,
}


@dataclass(frozen=True)
class Split:
    """One task's share of a snapshot: the offsets [start, end) of one partition."""

    topic: str
    partition: int
    start: int
    end: int


def splits(ranges: Sequence[OffsetRange], pieces: int, whole_partitions: bool) -> list[Split]:
    """The non-empty partitions of `ranges` as splits, a partition larger than the snapshot's `pieces`-th part cut
    into chunks of about that size so that every core gets work; `whole_partitions` keeps each partition in one
    split (a CDC source's row changes must be read in order by one task)."""
    parts = [(r.topic, p, r.start.get(p, 0), end) for r in ranges for p, end in sorted(r.end.items())
             if end > r.start.get(p, 0)]
    total = sum(end - start for _t, _p, start, end in parts)
    chunk = max(1, math.ceil(total / max(1, pieces)))
    result: list[Split] = []
    for topic, partition, start, end in parts:
        count = 1 if whole_partitions else math.ceil((end - start) / chunk)
        size = math.ceil((end - start) / count)
        result.extend(Split(topic, partition, offset, min(end, offset + size)) for offset in range(start, end, size))
    return result


def group_splits(parts: Sequence[Split], pieces: int) -> list[list[Split]]:
    """`parts` packed in order into groups of about the snapshot's `pieces`-th part, for one consumer per group:
    many small partitions make one task, not one each. A group holds at most one split of a partition, so
    `splits`' chunks of one partition (each over half a part) stay in groups of their own."""
    limit = math.ceil(sum(s.end - s.start for s in parts) / max(1, pieces))
    groups: list[list[Split]] = []
    size = 0
    for split in parts:
        group = groups[-1] if groups else []
        if not group or size + split.end - split.start > limit or any(
                (s.topic, s.partition) == (split.topic, split.partition) for s in group):
            group = []
            groups.append(group)
            size = 0
        group.append(split)
        size += split.end - split.start
    return groups


def splits_frame(spark: SparkSession, parts: Sequence[Split]) -> DataFrame:
    """`parts` as a DataFrame of `SPLIT_COLUMNS`, one split per partition."""
    return groups_frame(spark, [[split] for split in parts])


def groups_frame(spark: SparkSession, groups: Sequence[Sequence[Split]]) -> DataFrame:
    """`groups` as a DataFrame of `SPLIT_COLUMNS`, one group per partition."""
    rows = [[(s.topic, s.partition, s.start, s.end) for s in group] for group in groups]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, max(1, len(rows))).flatMap(lambda group: group),
                                 "topic string, partition int, start long, end long")


def read_split(config: Mapping[str, Any], split: Split, batch_size: int,
               stall_seconds: float = STALL_SECONDS) -> Iterator[list[SourceRecord]]:
    """The committed records of `split` in offset order, in lists of up to `batch_size` (`read_splits`)."""
    return read_splits(config, [split], batch_size, stall_seconds)


def read_splits(config: Mapping[str, Any], parts: Sequence[Split], batch_size: int,
                stall_seconds: float = STALL_SECONDS) -> Iterator[list[SourceRecord]]:
    """The committed records of `parts` (at most one split of a partition), read by one consumer, each partition's in
    offset order, in lists of up to `batch_size`. Offsets that hold no committed record (transaction markers,
    aborted records, compacted gaps) are passed over; a read that makes no progress for `stall_seconds` (e.g. an
    open transaction below the snapshot's end) raises."""
    todo = {(s.topic, s.partition): s for s in parts if s.end > s.start}
    if len(todo) < sum(1 for s in parts if s.end > s.start):
        raise ValueError("one consumer reads at most one split of a partition")
    if not todo:
        return
    consumer = Consumer({**config, **CONSUMER_SETTINGS, "group.id": f"rekey-backfill-{uuid.uuid4()}"})
    next_offset = {key: split.start for key, split in todo.items()}
    try:
        consumer.assign([TopicPartition(s.topic, s.partition, s.start) for s in todo.values()])
        progressed = time.monotonic()
        while todo:
            before = sum(next_offset.values())
            # No more than the offsets left: consume returns once they came, not after its timeout.
            left = sum(split.end - next_offset[key] for key, split in todo.items())
            messages = consumer.consume(min(batch_size, left), timeout=1.0)
            batch = []
            for message in messages:
                error = message.error()
                if error is not None:
                    raise KafkaException(error)
                key = (message.topic() or "", message.partition() or 0)
                split = todo.get(key)
                if split is None:  # fetched before its partition finished and paused
                    continue
                offset = message.offset() or 0
                if offset >= split.end:
                    next_offset[key] = split.end
                    continue
                batch.append(SourceRecord(split.topic, split.partition, offset, message.key(), message.value(),
                                          _headers(message.headers()), message.timestamp()[1]))
                next_offset[key] = offset + 1
            if batch:
                yield batch
            # Past markers and aborted records the consumer's position moves without a message.
            for position in consumer.position([TopicPartition(*key) for key in todo]):
                key = (position.topic, position.partition)
                next_offset[key] = max(next_offset[key], position.offset)
            finished = [key for key, split in todo.items() if next_offset[key] >= split.end]
            if finished:
                consumer.pause([TopicPartition(*key) for key in finished])
                for key in finished:
                    del todo[key]
            if sum(next_offset.values()) > before:
                progressed = time.monotonic()
            elif todo and time.monotonic() - progressed > stall_seconds:
                key, split = next(iter(todo.items()))
                raise RuntimeError(f"{split.topic}/{split.partition}: no committed record at offset {next_offset[key]} "
                                   f"for {stall_seconds:.0f} s, reading up to {split.end} (an open transaction?)")
    finally:
        consumer.close()


def _headers(raw: Any) -> dict[str, bytes]:
    """A message's headers (a list of (key, value or None), or None) as a `SourceRecord`'s."""
    return {str(k): v if v is not None else b"" for k, v in raw} if raw else {}

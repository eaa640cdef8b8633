"""Reading the org's partitions between two times: start and end offsets by timestamp (`offsets_for_times`),
every record in between scanned, the org's kept (by key, and by timestamp within the range)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kafka_rekey.shared.replay import ReplayScope, is_org_key

_LATEST = -1  # offsets_for_times' answer when no record is that recent


@dataclass
class Scan:
    matched: list[Message]
    scanned: int
    ranges: dict[int, tuple[int, int]]
    """Per partition read: the [start, end) offsets the time range gave."""


def offset_ranges(consumer: Consumer, scope: ReplayScope, since_ms: int | None,
                  until_ms: int | None) -> dict[int, tuple[int, int]]:
    """[start, end) per partition of the scope: the first offset at or after `since_ms` (else the first), up to
    the first at or after `until_ms` (else the end)."""
    ranges: dict[int, tuple[int, int]] = {}
    starts = _offsets_at(consumer, scope, since_ms)
    ends = _offsets_at(consumer, scope, until_ms)
    for partition in scope.partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(scope.topic, partition), timeout=10)
        start = low if since_ms is None or starts[partition] == _LATEST else max(low, starts[partition])
        if since_ms is not None and starts[partition] == _LATEST:
            start = high
        end = high if until_ms is None or ends[partition] == _LATEST else ends[partition]
        if end > start:
            ranges[partition] = (start, end)
    return ranges


def _offsets_at(consumer: Consumer, scope: ReplayScope, at_ms: int | None) -> dict[int, int]:
    if at_ms is None:
        return {}
    answer = consumer.offsets_for_times([TopicPartition(scope.topic, p, at_ms) for p in scope.partitions],
                                        timeout=30)
    for found in answer:
        if found.error is not None:
            raise KafkaException(found.error)
    return {found.partition: found.offset for found in answer}


def scan(config: dict[str, Any], scope: ReplayScope, since_ms: int | None, until_ms: int | None,
         on_range: Callable[[int], None] | None = None, progress: Callable[[int], None] | None = None,
         idle_timeout: float = 30.0) -> Scan:
    """Every record of the scope's partitions in the time range, the org's kept. `on_range` is told how many
    records the ranges hold before the reading starts, `progress` how many were read since its last call."""
    consumer = Consumer({**config, "group.id": f"rekey-replay-{uuid.uuid4()}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.partition.eof": True, "fetch.max.bytes": 52428800})
    org = scope.org_id.encode()
    try:
        metadata = consumer.list_topics(scope.topic, timeout=10).topics[scope.topic]
        if metadata.error is not None:
            raise KafkaException(KafkaError(metadata.error.code(), f"topic {scope.topic!r}: {metadata.error.str()}"))
        ranges = offset_ranges(consumer, scope, since_ms, until_ms)
        if on_range is not None:
            on_range(sum(end - start for start, end in ranges.values()))
        remaining = {partition: end for partition, (_start, end) in ranges.items()}
        consumer.assign([TopicPartition(scope.topic, p, start) for p, (start, _end) in ranges.items()])
        matched: list[Message] = []
        scanned = 0
        idle_since = time.monotonic()
        while remaining:
            batch = consumer.consume(5000, timeout=0.5)
            if not batch:
                if time.monotonic() - idle_since > idle_timeout:
                    raise TimeoutError(f"{scope.topic}: nothing read for {idle_timeout:.0f}s, partitions "
                                       f"{sorted(remaining)} short of their end offsets")
                continue
            idle_since = time.monotonic()
            read = 0
            for message in batch:
                partition, offset = message.partition() or 0, message.offset() or 0
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                end = remaining.get(partition)
                if end is None:
                    continue
                # Past the end, or at the partition's end (under read_committed, after any transaction marker).
                if error is not None or offset >= end:
                    del remaining[partition]
                    consumer.pause([TopicPartition(scope.topic, partition)])
                    continue
                read += 1
                stamp = message.timestamp()[1]
                if is_org_key(message.key(), org) and (since_ms is None or stamp >= since_ms) and (
                        until_ms is None or stamp < until_ms):
                    matched.append(message)
            scanned += read
            if progress is not None:
                progress(read)
        return Scan(matched, scanned, ranges)
    finally:
        consumer.close()

"""Sample the keys of a live topic: the most recent records of every partition, in proportion to its size."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

Progress = Callable[[int, int], None]
# What a partition answers in the first moments after its topic was created.
_NOT_READY_YET = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                  KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION}


def _watermarks(consumer: Consumer, topic: str, partition: int, deadline: float) -> tuple[int, int]:
    """Low and high watermark; retried while the partition has no leader yet (e.g. a topic created just now)."""
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            return low, high
        except KafkaException as error:
            reason = error.args[0]
            if not (reason.retriable() or reason.code() in _NOT_READY_YET) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _quotas(sizes: dict[int, tuple[int, int]], limit: int) -> dict[int, int]:
    total = sum(high - low for low, high in sizes.values())
    if total == 0:
        return {}
    return {p: min(high - low, math.ceil(limit * (high - low) / total)) for p, (low, high) in sizes.items()
            if high > low}


def sample_keys(config: dict[str, Any], topic: str, limit: int = 10_000, timeout: float = 60.0,
                on_progress: Progress | None = None) -> list[bytes | None]:
    """Up to about `limit` record keys of `topic` (the latest of each partition, spread in proportion to the
    partition's record count). Returns what was read by `timeout`; `on_progress(read, expected)` after each batch.
    Raises ValueError when the topic does not exist."""
    consumer = Consumer({**config, "group.id": f"rekey-sample-{uuid.uuid4()}", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    keys: list[bytes | None] = []
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise ValueError(f"cannot sample topic {topic!r}: it does not exist")
        deadline = time.monotonic() + timeout
        sizes = {p: _watermarks(consumer, topic, p, deadline) for p in metadata.partitions}
        quotas = _quotas(sizes, limit)
        ends = {p: sizes[p][1] for p in quotas}
        expected = sum(quotas.values())
        consumer.assign([TopicPartition(topic, p, ends[p] - quota) for p, quota in quotas.items()])
        while ends and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                partition, error = message.partition(), message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                if partition is None or partition not in ends:
                    continue
                if error is None:
                    keys.append(message.key())
                # EOF also ends a partition whose last offsets are transaction markers or compacted away.
                if error is not None or (message.offset() or 0) + 1 >= ends[partition]:
                    del ends[partition]
            if on_progress is not None:
                on_progress(len(keys), expected)
    finally:
        consumer.close()
    return keys

"""Sample the keys of a live topic: the most recent records of every partition, in proportion to its size."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

Progress = Callable[[int, int], None]


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
        sizes = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                 for p in metadata.partitions}
        quotas = _quotas(sizes, limit)
        ends = {p: sizes[p][1] for p in quotas}
        expected = sum(quotas.values())
        consumer.assign([TopicPartition(topic, p, ends[p] - quota) for p, quota in quotas.items()])
        deadline = time.monotonic() + timeout
        while ends and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                if message.error():
                    if message.error().code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(message.error())
                    ends.pop(message.partition(), None)  # past a transaction marker or compacted gap
                    continue
                if message.partition() not in ends:
                    continue
                keys.append(message.key())
                if message.offset() + 1 >= ends[message.partition()]:
                    del ends[message.partition()]
            if on_progress is not None:
                on_progress(len(keys), expected)
    finally:
        consumer.close()
    return keys

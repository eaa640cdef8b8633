"""Read whole topics (read_committed, up to their end offsets) into what the checker needs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition


def iter_topic(config: dict[str, Any], topic: str, idle_timeout: float = 30.0,
               progress: Callable[[int], None] | None = None) -> Iterator[Message]:
    """Every committed record of `topic` up to the end offsets taken when the call starts."""
    consumer = Consumer({**config, "group.id": f"rekey-check-{uuid.uuid4()}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "fetch.max.bytes": 52428800})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        if metadata.error is not None:
            raise KafkaException(metadata.error)
        remaining: dict[int, int] = {}
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high > low:
                remaining[partition] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in remaining])
        while remaining:
            batch = consumer.consume(5000, timeout=idle_timeout)
            if not batch:
                # Under read_committed the end offset may be a transaction marker that is never delivered.
                positions = consumer.position([TopicPartition(topic, p) for p in remaining])
                stuck = {tp.partition for tp in positions if tp.offset >= remaining[tp.partition] - 1}
                if stuck and len(stuck) == len(remaining):
                    return
                raise TimeoutError(f"{topic}: nothing read for {idle_timeout}s, partitions {sorted(remaining)} open")
            for message in batch:
                if message.error():
                    raise KafkaException(message.error())
                yield message
                if message.offset() + 1 >= remaining.get(message.partition(), 0):
                    remaining.pop(message.partition(), None)
            if progress is not None:
                progress(len(batch))
            for tp in consumer.position([TopicPartition(topic, p) for p in list(remaining)]):
                if tp.offset >= remaining[tp.partition]:
                    remaining.pop(tp.partition, None)
    finally:
        consumer.close()

"""Read a whole topic, up to the end offsets seen when reading starts, with a deadline."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from services.settings import KafkaSettings


class TopicReadError(RuntimeError):
    """A topic could not be read to its end; the message names the topic and the partitions left."""


@dataclass(frozen=True, slots=True)
class TopicRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes]
    timestamp_ms: int | None


def _headers(message: Message) -> dict[str, bytes]:
    headers: dict[str, bytes] = {}
    for header in message.headers() or []:
        name, value = header[0], header[1]
        if isinstance(name, str) and isinstance(value, bytes):
            headers[name] = value
    return headers


def read_to_end(kafka: KafkaSettings, topic: str, timeout: float = 120.0) -> list[TopicRecord]:
    """Every committed record of `topic` (read_committed) up to its current end, in partition/offset order."""
    consumer = Consumer({**kafka.librdkafka(), "group.id": f"rekey-reconcile-{uuid.uuid4()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise TopicReadError(f"topic {topic!r} not found: {metadata.error if metadata else 'no metadata'}")
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in metadata.partitions}
        pending = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])
        records: list[TopicRecord] = []
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise TopicReadError(f"reading {topic!r}: partitions {sorted(pending)} not read to their end "
                                     f"in {timeout:.0f}s")
            message = consumer.poll(0.5)
            if message is None:
                continue
            partition, offset, error = message.partition(), message.offset(), message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and partition is not None:
                    pending.discard(partition)
                    continue
                raise TopicReadError(f"reading {topic!r}: {error}")
            if partition is None or offset is None:
                continue
            kind, stamp = message.timestamp()
            records.append(TopicRecord(topic, partition, offset, message.key(), message.value(),
                                       _headers(message), stamp if kind else None))
            if offset + 1 >= ends[partition]:
                pending.discard(partition)
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()

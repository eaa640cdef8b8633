"""Read a whole topic, up to the end offsets seen when reading starts, with a deadline."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaException, Message

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.services.settings import KafkaSettings


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
    records: list[TopicRecord] = []
    try:
        for message in iter_topic(kafka.librdkafka(), topic, idle_timeout=timeout):
            kind, stamp = message.timestamp()
            records.append(TopicRecord(topic, message.partition(), message.offset(), message.key(), message.value(),
                                       _headers(message), stamp if kind else None))
    except (KafkaException, KeyError, TimeoutError) as error:
        raise TopicReadError(f"reading {topic!r}: {error}") from error
    return sorted(records, key=lambda r: (r.partition, r.offset))

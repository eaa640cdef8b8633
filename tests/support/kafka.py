"""Small real-broker helpers for tests: read a whole topic, count end offsets."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, Message, TopicPartition
from confluent_kafka.admin import AdminClient


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes]


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4()}"})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in metadata.partitions
        }
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0, isolation: str = "read_committed") -> list[Record]:
    """Every record of `topic` up to its current end offsets, in partition/offset order."""
    ends = end_offsets(bootstrap, topic)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"reader-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "enable.partition.eof": True,
    })
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
        pending = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise AssertionError(f"reading {topic}: partitions {sorted(pending)} not drained in {timeout}s")
            message: Message | None = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF
                    if message.offset() >= ends[message.partition()] or isolation == "read_committed":
                        pending.discard(message.partition())
                    continue
                raise AssertionError(f"reading {topic}: {message.error()}")
            records.append(Record(
                message.topic(), message.partition(), message.offset(), message.key(), message.value(),
                {k: v for k, v in (message.headers() or [])},
            ))
            if message.offset() + 1 >= ends[message.partition()]:
                pending.discard(message.partition())
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def create_topic(admin: AdminClient, name: str, partitions: int, replication: int = 1,
                 config: dict[str, str] | None = None) -> str:
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics([NewTopic(name, partitions, replication, config=config or {})])
    futures[name].result(30)
    return name

"""Small real-broker helpers for tests: read a whole topic, count end offsets."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.services.kafka.transient import LEADER_MOVING
from tests.support.waiting import wait_until


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes]


def end_offsets(bootstrap: str, topic: str, timeout: float = 30.0) -> dict[int, int]:
    """The end offset of every partition of `topic`; a partition whose leader is still moving (a new topic's, on a
    busy broker) is asked again until `timeout`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4()}"})
    deadline = time.monotonic() + timeout

    def high(partition: int) -> int:
        while True:
            try:
                return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
            except KafkaException as error:
                if error.args[0].code() not in LEADER_MOVING or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        return {p: high(p) for p in metadata.partitions}
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0, isolation: str = "read_committed") -> list[Record]:
    """Every record of `topic` up to its current end offsets, in partition/offset order."""
    records = [
        Record(m.topic(), m.partition(), m.offset(), m.key(), m.value(), dict(m.headers() or []))
        for m in iter_topic({"bootstrap.servers": bootstrap}, topic, idle_timeout=timeout, isolation=isolation)
    ]
    return sorted(records, key=lambda r: (r.partition, r.offset))


def create_topic(admin: AdminClient, name: str, partitions: int, replication: int = 1,
                 config: dict[str, str] | None = None) -> str:
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics([NewTopic(name, partitions, replication, config=config or {})])
    futures[name].result(30)

    def every_partition_led() -> bool:
        # The controller accepted the topic; the broker answering metadata may not know all of it yet.
        topic = admin.list_topics(name, timeout=5).topics.get(name)
        return topic is not None and topic.error is None and len(topic.partitions) == partitions and all(
            p.leader >= 0 for p in topic.partitions.values())

    wait_until(every_partition_led, 30, f"topic {name} with {partitions} partitions, each with a leader")
    return name

"""A group's committed offsets, read without joining the group (and without the admin call that crashes the
process while a coordinator moves)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_rekey.services.kafka.offsets import NO_OFFSET, committed_offsets

pytestmark = pytest.mark.broker


def test_committed_offsets_of_a_group(kafka_bootstrap: str, topic_factory) -> None:  # type: ignore[no-untyped-def]
    topic = topic_factory(partitions=3, prefix="offsets")
    group = f"offsets-{uuid.uuid4().hex[:8]}"
    config = {"bootstrap.servers": kafka_bootstrap}
    committer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 7), TopicPartition(topic, 2, 3)], asynchronous=False)
    finally:
        committer.close()
    partitions = [(topic, p) for p in range(3)]
    assert committed_offsets(config, group, partitions) == {(topic, 0): 7, (topic, 1): NO_OFFSET, (topic, 2): 3}
    assert committed_offsets(config, f"never-{group}", partitions) == dict.fromkeys(partitions, NO_OFFSET)

"""Kafka error codes that only mean "ask again shortly": a partition leader or a group coordinator is moving."""

from __future__ import annotations

from confluent_kafka import KafkaError

# A new topic's partitions, or a broker restarting.
LEADER_MOVING = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                           KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.UNKNOWN_LEADER_EPOCH,
                           KafkaError.FENCED_LEADER_EPOCH})
# A group's coordinator being elected or loading the group's offsets.
COORDINATOR_MOVING = frozenset({KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                KafkaError.COORDINATOR_NOT_AVAILABLE})

"""What the cluster says of consumer groups: their members, their committed offsets; and the one way offsets are
changed here, with the group empty.

Offsets are read through a consumer of the group that never joins it (`services.kafka.offsets`). The Python
client cannot delete a group's offsets on one topic, so a step that must drop some (`replace_offsets`) deletes
the empty group and commits the offsets it keeps; the migration record written before holds them all."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.kafka.offsets import committed_offsets
from kafka_rekey.services.kafka.transient import COORDINATOR_MOVING

ADMIN_TIMEOUT = 30.0
TopicPartitionKey = tuple[str, int]


class GroupRefused(Exception):
    """A check refused the step (exit 3); the message says why and nothing was committed."""


def partitions_of(config: Mapping[str, Any], topics: Iterable[str]) -> list[TopicPartitionKey]:
    """Every partition of `topics`; a ValueError names a topic that does not exist."""
    with AdminClient(dict(config)) as admin:
        metadata = admin.list_topics(timeout=ADMIN_TIMEOUT).topics
    partitions = []
    for topic in topics:
        if topic not in metadata or metadata[topic].error is not None:
            raise ValueError(f"topic {topic!r} does not exist on the cluster")
        partitions += [(topic, partition) for partition in sorted(metadata[topic].partitions)]
    return partitions


def offsets_on(config: Mapping[str, Any], group: str, partitions: Iterable[TopicPartitionKey]) -> dict[
        TopicPartitionKey, int]:
    """`group`'s committed offsets on `partitions`, without those it has none on."""
    return {tp: offset for tp, offset in committed_offsets(dict(config), group, partitions).items() if offset >= 0}


def all_offsets(config: Mapping[str, Any], group: str) -> dict[TopicPartitionKey, int]:
    """Every committed offset of `group`, whatever the topic."""
    with AdminClient(dict(config)) as admin:
        request = ConsumerGroupTopicPartitions(group)
        answer = admin.list_consumer_group_offsets([request], request_timeout=ADMIN_TIMEOUT)[group].result(
            ADMIN_TIMEOUT)
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions if tp.offset >= 0}


def groups(config: Mapping[str, Any]) -> list[str]:
    """The consumer groups the cluster knows."""
    with AdminClient(dict(config)) as admin:
        listed = admin.list_consumer_groups(request_timeout=ADMIN_TIMEOUT).result(ADMIN_TIMEOUT)
    return sorted(group.group_id for group in listed.valid)


def members(config: Mapping[str, Any], names: list[str]) -> dict[str, int]:
    """The number of active members of each group (0: empty or unknown)."""
    if not names:
        return {}
    with AdminClient(dict(config)) as admin:
        futures = admin.describe_consumer_groups(names, request_timeout=ADMIN_TIMEOUT)
        return {name: len(future.result(ADMIN_TIMEOUT).members) for name, future in futures.items()}


def readers(config: Mapping[str, Any], names: list[str], topic: str) -> dict[str, int]:
    """The groups among `names` with members assigned partitions of `topic`, and how many such members."""
    if not names:
        return {}
    with AdminClient(dict(config)) as admin:
        futures = admin.describe_consumer_groups(names, request_timeout=ADMIN_TIMEOUT)
        described = {name: future.result(ADMIN_TIMEOUT) for name, future in futures.items()}
    counts = {name: sum(1 for member in group.members if member.assignment is not None and any(
        tp.topic == topic for tp in member.assignment.topic_partitions)) for name, group in described.items()}
    return {name: count for name, count in counts.items() if count}


def require_empty(config: Mapping[str, Any], group: str) -> None:
    count = members(config, [group])[group]
    if count:
        raise GroupRefused(f"group {group!r} has {count} active member{'s' if count > 1 else ''}: stop its "
                           "consumers first (the broker takes offsets only for an empty group)")


def commit(config: Mapping[str, Any], group: str, offsets: Mapping[TopicPartitionKey, int]) -> None:
    """Commit `offsets` for the empty `group`, asked again while its coordinator moves or loads; the broker's
    refusal of a group that gained a member is a refusal."""
    if not offsets:
        return
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())])
    deadline = time.monotonic() + ADMIN_TIMEOUT
    with AdminClient(dict(config)) as admin:
        while True:
            try:
                answer = admin.alter_consumer_group_offsets([request], request_timeout=ADMIN_TIMEOUT)[group].result(
                    ADMIN_TIMEOUT)
                failed = [tp.error for tp in answer.topic_partitions if tp.error is not None]
                if failed:  # the request succeeds while each partition reports its own error
                    raise KafkaException(failed[0])
                return
            except KafkaException as error:
                code = error.args[0].code()
                if code in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS,
                            KafkaError.ILLEGAL_GENERATION):
                    raise GroupRefused(f"the broker refused offsets for group {group!r}: it has active members "
                                       f"({error.args[0].str()})") from error
                if code not in COORDINATOR_MOVING or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def replace_offsets(config: Mapping[str, Any], group: str, keep: Mapping[TopicPartitionKey, int]) -> None:
    """Make `keep` the empty `group`'s only committed offsets."""
    require_empty(config, group)
    with AdminClient(dict(config)) as admin:
        try:
            admin.delete_consumer_groups([group], request_timeout=ADMIN_TIMEOUT)[group].result(ADMIN_TIMEOUT)
        except KafkaException as error:
            if error.args[0].code() == KafkaError.NON_EMPTY_GROUP:
                raise GroupRefused(f"group {group!r} gained a member: nothing was changed") from error
            if error.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                raise
    commit(config, group, keep)


def high_watermarks(config: Mapping[str, Any], partitions: Iterable[TopicPartitionKey]) -> dict[
        TopicPartitionKey, int]:
    """The end offset of each partition."""
    consumer = Consumer({**config, "group.id": "rekey-watermarks", "enable.auto.commit": False})
    try:
        return {(topic, partition): int(consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                                       timeout=ADMIN_TIMEOUT)[1])
                for topic, partition in partitions}
    finally:
        consumer.close()

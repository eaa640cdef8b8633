"""Topic administration against a real cluster: wait for brokers, describe, create, add partitions."""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, ResourceType

from kafka_rekey.shared.catalog import ObservedTopic, TopicSpec

ADMIN_TIMEOUT = 30.0


class BrokersUnavailable(RuntimeError):
    """No broker answered within the allowed time."""


class TopicAdminError(RuntimeError):
    """The cluster refused a topic operation; the message names the topic and Kafka's reason."""


def wait_for_brokers(admin: AdminClient, bootstrap: str, seconds: float) -> None:
    """Return once the cluster answers a metadata request; keep asking for `seconds` (0: one 10 s attempt)."""
    deadline = time.monotonic() + seconds
    attempt = 10.0 if seconds <= 0 else min(5.0, seconds)
    while True:
        try:
            admin.list_topics(timeout=attempt)  # blocks up to `attempt` while no broker answers
            return
        except KafkaException as error:
            admin.poll(0)  # hands librdkafka's queued log lines to its logger
            if time.monotonic() >= deadline:
                raise BrokersUnavailable(
                    f"no Kafka broker answered at {bootstrap} (waited {max(seconds, attempt):.0f}s): {error}"
                ) from error


def describe_topics(admin: AdminClient, names: Iterable[str]) -> dict[str, ObservedTopic]:
    """The topics among `names` that exist, with partition count, replication factor and topic configs."""
    metadata = admin.list_topics(timeout=ADMIN_TIMEOUT).topics
    existing = [name for name in names if name in metadata and metadata[name].error is None]
    if not existing:
        return {}
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, name) for name in existing])
    configs = {resource.name: future.result(ADMIN_TIMEOUT) for resource, future in futures.items()}
    observed = {}
    for name in existing:
        partitions = metadata[name].partitions
        replication = len(partitions[min(partitions)].replicas) if partitions else 0
        observed[name] = ObservedTopic(
            name, len(partitions), replication, {key: entry.value for key, entry in configs[name].items()}
        )
    return observed


def describe_visible_topics(admin: AdminClient, names: list[str], timeout: float = ADMIN_TIMEOUT,
                            ) -> dict[str, ObservedTopic]:
    """Describe `names`, which the cluster says exist, waiting until this broker's metadata shows them all."""
    deadline = time.monotonic() + timeout
    observed = describe_topics(admin, names)
    while len(observed) < len(names):
        if time.monotonic() > deadline:
            missing = sorted(set(names) - set(observed))
            raise TopicAdminError(f"topics {missing} exist but were not visible in metadata within {timeout:.0f}s")
        time.sleep(0.2)
        observed = describe_topics(admin, names)
    return observed


def create_topics(admin: AdminClient, specs: list[TopicSpec]) -> tuple[list[str], list[str]]:
    """Create `specs` with their catalog configs. Returns (names created, names that already existed: created
    meanwhile by someone else, or not yet in the metadata this broker answered with)."""
    if not specs:
        return [], []
    futures = admin.create_topics([
        NewTopic(spec.name, spec.partitions, spec.replication_factor, config=spec.kafka_configs())
        for spec in specs
    ])
    created, existing = [], []
    for name, future in futures.items():
        try:
            future.result(ADMIN_TIMEOUT)
            created.append(name)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopicAdminError(f"creating topic {name!r}: {error.args[0].str()}") from error
            existing.append(name)
    return created, existing


def add_partitions(admin: AdminClient, name: str, total: int) -> None:
    """Grow topic `name` to `total` partitions."""
    future = admin.create_partitions([NewPartitions(name, total)])[name]
    try:
        future.result(ADMIN_TIMEOUT)
    except KafkaException as error:
        raise TopicAdminError(f"growing topic {name!r} to {total} partitions: {error.args[0].str()}") from error

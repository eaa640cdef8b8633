"""The runtime's own topics on the real broker: a changelog follows its input topic's partitions."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka.admin import AdminClient

from kafka_rekey.services.runtime.topics import InternalTopic, changelog_config, ensure_topics


def test_a_changelog_with_fewer_partitions_than_its_input_grows_to_them(
        kafka_admin: AdminClient, topic_factory: Callable[..., str]) -> None:
    """A table is kept per input partition: a changelog an earlier release created with fewer partitions than a
    source topic gets the missing ones, where the tables of those partitions write."""
    name = topic_factory(partitions=8, prefix="changelog", config={"cleanup.policy": "compact"})
    counts = ensure_topics(kafka_admin, [InternalTopic(name, 12, 1, changelog_config())], grow=True)
    assert counts == {name: 12}
    assert len(kafka_admin.list_topics(name, timeout=10).topics[name].partitions) == 12


def test_an_existing_topic_keeps_its_partitions_unless_grown(
        kafka_admin: AdminClient, topic_factory: Callable[..., str]) -> None:
    """The sequencing hop places records by key: its partition count is never changed under it."""
    name = topic_factory(partitions=4, prefix="sequencing")
    assert ensure_topics(kafka_admin, [InternalTopic(name, 8, 1)]) == {name: 4}

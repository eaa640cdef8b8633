"""The runtime's own topics (internal hops, changelogs): created before the worker joins its group."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

CHANGELOG_SEGMENT_BYTES = 4 * 1024 * 1024
CHANGELOG_SEGMENT_MS = 3_600_000
CHANGELOG_DIRTY_RATIO = "0.1"
CHANGELOG_TOMBSTONE_MS = 86_400_000
"""How long the cleaner keeps a tombstone once it has compacted past it: a store restored from its own changelog
offset after being offline longer than this may miss a key's tombstone (Kafka's default, set so that a broker-wide
override cannot shorten it)."""


def changelog_config() -> dict[str, str]:
    """The configs of a changelog topic: compacted.

    The log cleaner compacts closed segments only, and only once their uncompacted share passes the dirty ratio:
    with the broker's 1 GB segments a changelog was never compacted, so a restore read every change of every key
    instead of about one record per live key. Small segments, rolled at least hourly, a low dirty ratio and no
    compaction lag keep it near that (the segment being written is never compacted: a restore reads it whole),
    for more cleaner work on the broker (docs/ARCHITECTURE.md, State). Kafka Streams sets none of these on its
    changelogs and leaves them to the broker's defaults."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(CHANGELOG_SEGMENT_BYTES),
        "segment.ms": str(CHANGELOG_SEGMENT_MS),
        "min.cleanable.dirty.ratio": CHANGELOG_DIRTY_RATIO,
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": str(CHANGELOG_TOMBSTONE_MS),
    }


def expiring_changelog_config(retention_ms: int) -> dict[str, str]:
    """The configs of a changelog whose keys are each written once and never deleted (a batched table's chunks):
    deleted past `retention_ms`, not compacted. Compaction would remove nothing from it, while the log cleaner
    copied every one of its segments again at each pass, on the broker's CPU."""
    return {
        "cleanup.policy": "delete",
        "retention.ms": str(retention_ms),
        "segment.bytes": str(CHANGELOG_SEGMENT_BYTES),
        "segment.ms": str(min(CHANGELOG_SEGMENT_MS, retention_ms)),
    }


@dataclass(frozen=True)
class InternalTopic:
    name: str
    partitions: int
    replication_factor: int
    config: dict[str, str] = field(default_factory=dict)


def ensure_topics(admin: AdminClient, topics: Iterable[InternalTopic], timeout: float = 30.0,
                  grow: bool = False) -> dict[str, int]:
    """Create the topics that do not exist yet, wait until the cluster's metadata shows every one of them, and
    return their partition counts (an existing topic keeps its own, unless `grow`: then one with fewer partitions
    than asked gets the missing ones, which only topics no record is placed in by key may).

    A topic missing from the metadata at the first assignment would be left out of it until the next metadata
    refresh, so its records would sit unread."""
    wanted = {topic.name: topic for topic in topics}
    if not wanted:
        return {}
    futures = admin.create_topics([NewTopic(t.name, t.partitions, t.replication_factor, config=t.config)
                                   for t in wanted.values()])
    existing = []
    for name, future in futures.items():
        try:
            future.result(timeout)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            existing.append(wanted[name])
    # Another worker may have created an existing one a moment ago: visible first, then aligned and grown.
    _wait_visible(admin, wanted, lambda topic: 1, timeout)
    align_configs(admin, existing, timeout)
    if grow:
        _grow(admin, existing, timeout)
    return _wait_visible(admin, wanted, lambda topic: topic.partitions if grow else 1, timeout)


def _wait_visible(admin: AdminClient, wanted: dict[str, InternalTopic], partitions: Callable[[InternalTopic], int],
                  timeout: float) -> dict[str, int]:
    """Wait until the metadata shows each of `wanted` with at least `partitions(topic)` partitions; return their
    partition counts."""
    deadline = time.monotonic() + timeout
    while True:
        metadata = admin.list_topics(timeout=10).topics
        missing = [n for n in wanted if n not in metadata or metadata[n].error is not None
                   or len(metadata[n].partitions) < partitions(wanted[n])]
        if not missing:
            return {name: len(metadata[name].partitions) for name in wanted}
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {missing} not visible in the cluster metadata after {timeout:.0f}s")
        time.sleep(0.2)


def _grow(admin: AdminClient, existing: list[InternalTopic], timeout: float) -> None:
    metadata = admin.list_topics(timeout=10).topics
    short = [NewPartitions(t.name, t.partitions) for t in existing
             if t.name in metadata and len(metadata[t.name].partitions) < t.partitions]
    if short:
        for future in admin.create_partitions(short).values():
            future.result(timeout)


def align_configs(admin: AdminClient, topics: Iterable[InternalTopic], timeout: float = 30.0) -> list[str]:
    """Set the configs the runtime asks for on existing topics that have other values (a changelog created by an
    earlier release keeps its configs otherwise); return the names of the topics changed."""
    wanted = {topic.name: topic.config for topic in topics if topic.config}
    if not wanted:
        return []
    changes = []
    for resource, configs in _describe(admin, list(wanted), timeout).items():
        current = {name: entry.value for name, entry in configs.items()}
        differing = {name: value for name, value in wanted[resource.name].items()
                     if not _same(name, current.get(name), value)}
        if differing:
            changes.append(ConfigResource(ResourceType.TOPIC, resource.name, incremental_configs=[
                ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
                for name, value in differing.items()]))
    if changes:
        for future in admin.incremental_alter_configs(changes).values():
            future.result(timeout)
    return sorted(change.name for change in changes)


def _describe(admin: AdminClient, names: list[str], timeout: float) -> dict[ConfigResource, dict[str, ConfigEntry]]:
    """The configs of topics `names`, asked again while the broker answering does not know one yet (its
    metadata lags the controller's for a moment after another client created it)."""
    deadline = time.monotonic() + timeout
    while True:
        described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, name) for name in names])
        try:
            return {resource: future.result(timeout) for resource, future in described.items()}
        except KafkaException as error:
            if error.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def _same(name: str, current: str | None, wanted: str) -> bool:
    if current is None:
        return False
    if name == "cleanup.policy":
        return set(current.split(",")) == set(wanted.split(","))
    if name == "min.cleanable.dirty.ratio":
        return float(current) == float(wanted)
    return current == wanted

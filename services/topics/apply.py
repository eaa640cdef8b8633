"""`apply_catalog`: make the cluster hold every catalog topic, and say what differs instead of silently fixing it.

Missing topics are created with their catalog configs. Existing topics are compared with the catalog: config,
replication and partition-count differences are reported as drift and left alone, except that a partition
count below the catalog's is raised when that is safe (unkeyed topic) or explicitly allowed (`allow_remap`):
on a keyed topic more partitions move keys to other partitions, so the report says how many keys of a sample
would move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from confluent_kafka.admin import AdminClient

from kafka_rekey.services.kafka.sampling import sample_keys
from kafka_rekey.services.kafka.topics import (
    add_partitions,
    create_topics,
    describe_topics,
    describe_visible_topics,
    wait_for_brokers,
)
from kafka_rekey.shared.catalog import Catalog, Drift, TopicSpec, topic_drift
from kafka_rekey.shared.catalog.drift import PARTITIONS
from kafka_rekey.shared.keys import synthetic_keys
from kafka_rekey.shared.partitioning import moved_keys


@dataclass(frozen=True)
class RemapImpact:
    """A partition-count increase and how many keys of a sample it sends to another partition."""

    topic: str
    current: int
    wanted: int
    moved: int
    sampled: int
    sample: Literal["topic", "synthetic"]

    @property
    def moved_percent(self) -> float:
        return 100.0 * self.moved / self.sampled if self.sampled else 0.0


@dataclass
class ApplyReport:
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    remapped: list[RemapImpact] = field(default_factory=list)
    refused: list[RemapImpact] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    """Retired topics that still exist (`rekey migrate retire --topic T --delete` deletes one)."""

    @property
    def in_sync(self) -> bool:
        """Every catalog topic matches the catalog: no drift left as it is, no keyed remap refused."""
        return not (self.refused or self.drift)


def remap_impact(config: dict[str, Any], spec: TopicSpec, current: int, sample_size: int) -> RemapImpact:
    """How many keys move when `spec.name` grows from `current` to `spec.partitions` partitions: measured on
    keys read from the topic, or on synthetic keys of its key strategy when it holds no keyed records."""
    keys = [key for key in sample_keys(config, spec.name, limit=sample_size) if key is not None]
    sample: Literal["topic", "synthetic"] = "topic"
    if not keys:
        keys = [key.encode() for key in synthetic_keys(spec.key.strategy, sample_size)]
        sample = "synthetic"
    moved, sampled = moved_keys(keys, current, spec.partitions)
    return RemapImpact(spec.name, current, spec.partitions, moved, sampled, sample)


def apply_catalog(
    catalog: Catalog,
    config: dict[str, Any],
    *,
    allow_remap: bool = False,
    replication_factor: int | None = None,
    min_insync_replicas: int | None = None,
    wait_for_brokers_seconds: float = 0.0,
    sample_size: int = 10_000,
) -> ApplyReport:
    """Create and check every topic `catalog` provisions, on the cluster reached with librdkafka `config`."""
    desired = [t.provisioned(replication_factor, min_insync_replicas) for t in catalog.provisioned_topics()]
    with AdminClient(config) as admin:  # closed here, not by the garbage collector on a librdkafka thread
        wait_for_brokers(admin, str(config.get("bootstrap.servers")), wait_for_brokers_seconds)
        observed = describe_topics(admin, [t.name for t in desired])
        report = ApplyReport(external=[s.name for s in catalog.sources if not s.managed])
        report.retired = sorted(describe_topics(admin, [t.name for t in catalog.retired_topics()]))
        report.created, existing = create_topics(admin, [t for t in desired if t.name not in observed])
        if existing:
            observed.update(describe_visible_topics(admin, existing))
        for spec in (t for t in desired if t.name in observed):
            actual = observed[spec.name]
            drift = topic_drift(spec, actual)
            report.drift += [d for d in drift if d.setting != PARTITIONS]
            if actual.partitions > spec.partitions:
                report.drift += [d for d in drift if d.setting == PARTITIONS]
            elif actual.partitions < spec.partitions:
                impact = remap_impact(config, spec, actual.partitions, sample_size)
                if spec.keyed and not allow_remap:
                    report.refused.append(impact)
                else:
                    add_partitions(admin, spec.name, spec.partitions)
                    report.remapped.append(impact)
            if not drift:
                report.unchanged.append(spec.name)
    return report

"""Drift: where a topic as it exists on the cluster differs from its catalog entry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_rekey.shared.catalog.models import TopicSpec

PARTITIONS = "partitions"
REPLICATION_FACTOR = "replication_factor"


@dataclass(frozen=True)
class ObservedTopic:
    """A topic as described by the cluster: partition count, replication factor and topic configs."""

    name: str
    partitions: int
    replication_factor: int
    configs: Mapping[str, str]


@dataclass(frozen=True)
class Drift:
    """One setting whose actual value differs from the catalog's (`setting` is a config name or a field)."""

    topic: str
    setting: str
    catalog: str
    actual: str


def _normalised(config: str, value: str | None) -> str | None:
    if value is not None and config == "cleanup.policy":
        return ",".join(sorted(part.strip() for part in value.split(",")))
    return value


def topic_drift(spec: TopicSpec, observed: ObservedTopic) -> list[Drift]:
    """Every difference between `spec` and `observed`, partition count first."""
    drift: list[Drift] = []
    if observed.partitions != spec.partitions:
        drift.append(Drift(spec.name, PARTITIONS, str(spec.partitions), str(observed.partitions)))
    if observed.replication_factor != spec.replication_factor:
        drift.append(Drift(spec.name, REPLICATION_FACTOR, str(spec.replication_factor),
                           str(observed.replication_factor)))
    for config, wanted in spec.kafka_configs().items():
        actual = observed.configs.get(config)
        if _normalised(config, actual) != _normalised(config, wanted):
            drift.append(Drift(spec.name, config, wanted, "(unset)" if actual is None else actual))
    return drift

"""Per-family routing lookups, precomputed once per catalog so routing a record is a few dict/set lookups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_rekey.shared.keys import BaseKeyStrategy, KeyStrategy


@dataclass(frozen=True, slots=True)
class TopicTarget:
    """A topic and its catalog partition count."""

    topic: str
    partitions: int


@dataclass(frozen=True, slots=True)
class FamilyTable:
    """What `shared.routing.route` needs to know about one family."""

    family: str
    strategy: KeyStrategy
    base_strategy: BaseKeyStrategy
    salt_buckets: int
    hot_orgs: frozenset[str]
    high_volume_orgs: frozenset[str]
    dedicated: Mapping[str, TopicTarget]
    high: TopicTarget | None
    low: TopicTarget

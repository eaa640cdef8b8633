"""What every migration step starts from: the catalog's family and sources checked, and the facts the cluster
holds about a group and the live ACL (offsets, hand-off runs, what is in flight, the last verification)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from kafka_rekey.services.handoff import COMPLETE, RunRecord, read_runs
from kafka_rekey.services.kafka.reading import iter_from
from kafka_rekey.services.migration.groups import GroupRefused, TopicPartitionKey, offsets_on, partitions_of
from kafka_rekey.services.migration.records import MigrationsTopic, migrations_topic, read_migrations
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.migration import Readiness, SourceFacts, readiness
from kafka_rekey.shared.migration.readiness import offsets_of


@dataclass
class Family:
    """A source-fed family of the catalog, with the partitions of its topics and of its sources."""

    catalog: Catalog
    config: dict[str, Any]
    name: str
    acl_group: str
    topics: list[str]
    sources: list[str]
    """Every catalog source feeding the family."""
    partitions: list[TopicPartitionKey]
    source_partitions: list[TopicPartitionKey]

    @property
    def migrations_topic(self) -> str:
        return migrations_topic(self.catalog)

    @property
    def sequencing_topic(self) -> str:
        return f"{self.acl_group}-sequencing"

    def migrations(self) -> MigrationsTopic:
        return read_migrations(self.config, self.migrations_topic)

    def acl_offsets(self) -> dict[TopicPartitionKey, int]:
        return offsets_on(self.config, self.acl_group, self.source_partitions)

    def in_flight(self) -> int:
        """Records on the sequencing topic past the ACL's committed offsets: read but not yet in the family."""
        try:
            partitions = partitions_of(self.config, [self.sequencing_topic])
        except ValueError:
            return 0
        committed = offsets_on(self.config, self.acl_group, partitions)
        starts = {partition: committed.get((topic, partition), 0) for topic, partition in partitions}
        return sum(1 for _ in iter_from(self.config, self.sequencing_topic, starts))

    @cached_property
    def runs(self) -> list[RunRecord]:
        """The backfill runs into the family, from the hand-off topic."""
        runs = read_runs(self.config, self.catalog.checkpoint_topic).values()
        return [run for run in runs if run.family == self.name]

    def backfills(self) -> dict[str, str]:
        """Source topic -> the state of the backfills into the family that read it: `complete` when every one is,
        else the state of one that is not."""
        states: dict[str, str] = {}
        for run in self.runs:
            for topic in run.source.split("+"):
                if states.get(topic, COMPLETE) == COMPLETE:
                    states[topic] = run.state
        return states

    def backfilled_ends(self) -> dict[TopicPartitionKey, int]:
        """The snapshot end offsets of the complete backfills into the family: below them, history is key-sorted."""
        ends: dict[TopicPartitionKey, int] = {}
        for run in self.runs:
            if run.state == COMPLETE:
                for offsets in run.offsets:
                    for partition, end in offsets.end.items():
                        ends[(offsets.topic, partition)] = max(end, ends.get((offsets.topic, partition), 0))
        return ends

    def readiness(self, group_offsets: Mapping[TopicPartitionKey, int], migrations: MigrationsTopic) -> Readiness:
        """Whether the family is ready for a group with `group_offsets` on its sources."""
        read = sorted({topic for topic, _ in group_offsets})
        acl, backfills, in_flight = self.acl_facts
        facts = [SourceFacts(topic, offsets_of(group_offsets, topic), offsets_of(acl, topic), backfills.get(topic))
                 for topic in read]
        return readiness(facts, in_flight, migrations.verified(read, self.name))

    @cached_property
    def acl_facts(self) -> tuple[dict[TopicPartitionKey, int], dict[str, str], int]:
        """The live ACL's committed source offsets, the backfills' states and the records in flight, read once."""
        return self.acl_offsets(), self.backfills(), self.in_flight()


def family_of(catalog: Catalog, config: dict[str, Any], family: str, acl_group: str,
              source: str | None = None) -> Family:
    """The family `family`, checked: a ValueError (usage) for a name the catalog does not have, `GroupRefused`
    for a source that does not feed it."""
    if family not in catalog.families:
        if family in {t.name for t in catalog.topics}:
            raise ValueError(f"{family!r} is a topic, not a family; `rekey migrate` moves groups onto a family's "
                             "topics, and derived topics such as the projection's carry no source position")
        raise ValueError(f"family {family!r} is not in the catalog (families: {', '.join(sorted(catalog.families))})")
    declared = {s.name: s for s in catalog.sources}
    if source is not None and source not in declared:
        raise ValueError(f"topic {source!r} is not a source of the catalog (sources: {', '.join(sorted(declared))})")
    if source is not None and family not in declared[source].feeds:
        raise GroupRefused(f"family {family!r} is not fed by {source} (it feeds {', '.join(declared[source].feeds)})")
    topics = list(catalog.family(family).output_topics)
    sources = [s.name for s in catalog.sources if family in s.feeds]
    return Family(catalog, config, family, acl_group, topics, sources, partitions_of(config, topics),
                  partitions_of(config, sources))

"""The way back: a group's position on a family mapped to offsets on the source partitions its records came from.

Per source partition, the rollback offset is the smallest source offset among the family's records the group has
not consumed, and never past what the live ACL has committed there (what it has not committed may not have
reached the family yet). Records the group consumed on the family from at or past that offset come again on the
source; the boundary names them, so a consumer can drop them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_rekey.shared.migration.positions import Consumed, ranges

SourcePartition = tuple[str, int]


@dataclass(frozen=True)
class RollbackPlan:
    offsets: dict[SourcePartition, int]
    """The group's offset to commit on each source partition."""
    boundary: dict[SourcePartition, Consumed]
    """What the group has consumed of each source partition, counting its reads on the family."""

    @property
    def redelivered(self) -> int:
        return sum(end - start for consumed in self.boundary.values() for start, end in consumed.beyond)


def rollback_offsets(first_unconsumed: Mapping[SourcePartition, int],
                     acl_committed: Mapping[SourcePartition, int]) -> dict[SourcePartition, int]:
    """The rollback offset of every source partition either side knows (an ACL offset below 0: none committed)."""
    offsets = {}
    for partition in sorted(first_unconsumed.keys() | acl_committed.keys()):
        known = [offset for offset in (first_unconsumed.get(partition), acl_committed.get(partition))
                 if offset is not None and offset >= 0]
        if known:
            offsets[partition] = min(known)
    return offsets


def plan_rollback(offsets: Mapping[SourcePartition, int],
                  consumed: Iterable[tuple[SourcePartition, int]]) -> RollbackPlan:
    """`consumed`: the source position of every record the group consumed on the family."""
    beyond: dict[SourcePartition, list[int]] = {}
    for partition, offset in consumed:
        if partition in offsets and offset >= offsets[partition]:
            beyond.setdefault(partition, []).append(offset)
    return RollbackPlan(dict(offsets), {partition: Consumed(below, ranges(beyond.get(partition, ())))
                                        for partition, below in offsets.items()})

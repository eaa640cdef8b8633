"""Whether a family has caught up with a consumer group, so the group can move onto it without a gap."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

COMPLETE = "complete"


@dataclass(frozen=True)
class SourceFacts:
    """One source topic of the group, as the cluster and the hand-off topic tell it."""

    topic: str
    group: Mapping[int, int]
    """The group's committed offset per partition (partitions without one absent)."""
    acl: Mapping[int, int]
    """The live ACL's committed offset per partition (partitions without one absent)."""
    backfill: str | None
    """The state of the backfill run into the family (`complete`, ...), None where none ran."""


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reasons: tuple[str, ...]
    acl_behind: int
    """Source records the ACL has still to commit to reach the group's offsets."""


def readiness(sources: Sequence[SourceFacts], in_flight: int, verified: bool | None) -> Readiness:
    """Ready when every backfill that ran is complete, the ACL's committed offsets are at or past the group's on
    every partition with nothing in flight between source and family, and the last verification passed.
    `verified`: the last `rekey verify` result, None if none was recorded."""
    reasons = []
    behind = 0
    for source in sources:
        if source.backfill is not None and source.backfill != COMPLETE:
            reasons.append(f"the backfill of {source.topic} is {source.backfill}, not {COMPLETE}")
        lagging = {partition: offset - source.acl.get(partition, 0) for partition, offset in source.group.items()
                   if source.acl.get(partition, 0) < offset}
        if lagging:
            behind += sum(lagging.values())
            reasons.append(f"the ACL is {sum(lagging.values()):,} records behind the group on {source.topic} "
                           f"(partitions {', '.join(map(str, sorted(lagging)))})")
    if in_flight:
        reasons.append(f"the sequencing stage holds {in_flight:,} records not yet in the family")
    if verified is None:
        reasons.append("no `rekey verify` of the source and family is recorded")
    elif not verified:
        reasons.append("the last `rekey verify` of the source and family found mismatches")
    return Readiness(not reasons, tuple(reasons), behind)


def offsets_of(committed: Mapping[tuple[str, int], int], topic: str) -> dict[int, int]:
    """One topic's committed offsets, without partitions that have none."""
    return {partition: offset for (name, partition), offset in committed.items() if name == topic and offset >= 0}

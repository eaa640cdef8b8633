"""`rekey migrate consumers`: move an empty consumer group from its source topics onto a family's topics, so it
resumes at the first record whose source position it has not consumed.

Everything is checked and scanned first; then the migration record (with the group's previous offsets), the
group's offsets on the family, the deletion of its offsets on the sources, and the record's `moved` step."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kafka_rekey.services.migration.context import Family
from kafka_rekey.services.migration.groups import (
    GroupRefused,
    TopicPartitionKey,
    all_offsets,
    commit,
    offsets_on,
    replace_offsets,
    require_empty,
)
from kafka_rekey.services.migration.records import MOVED, MOVING, ROLLED_BACK, Migration, write
from kafka_rekey.services.migration.scanning import Progress, scan_family
from kafka_rekey.shared.migration import Consumed, MovePlan, plan_move


@dataclass
class MoveResult:
    group: str
    family: str
    sources: list[str]
    boundary: dict[TopicPartitionKey, Consumed]
    plan: MovePlan
    dry_run: bool
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "family": self.family, "sources": self.sources, "dry_run": self.dry_run,
                "boundary": {f"{t}/{p}": c.below for (t, p), c in sorted(self.boundary.items())},
                "start_offsets": {f"{t}/{p}": o for (t, p), o in sorted(self.plan.start_offsets.items())},
                "scanned": self.plan.scanned, "redelivered": self.plan.redelivered,
                "new_sources": self.plan.new_sources, "warnings": self.warnings,
                "seconds": round(self.seconds, 3)}


def move_group(family: Family, group: str, source: str, *, dry_run: bool = False,
               keep_source_offsets: bool = False, progress: Progress | None = None) -> MoveResult:
    """Move `group` onto `family`'s topics; `GroupRefused` (nothing committed) when a check refuses."""
    started = time.monotonic()
    migrations = family.migrations()
    require_empty(family.config, group)
    offsets = offsets_on(family.config, group, family.source_partitions)
    if not any(topic == source for topic, _ in offsets):
        raise GroupRefused(f"group {group!r} has no committed offsets on {source}")
    on_family = offsets_on(family.config, group, family.partitions)
    if on_family:
        raise GroupRefused(f"group {group!r} already has offsets on {family.name}'s topics "
                           f"({', '.join(sorted({t for t, _ in on_family}))}): roll it back first")
    verdict = family.readiness(offsets, migrations)
    if not verdict.ready:
        raise GroupRefused(f"family {family.name!r} is not ready for group {group!r}: {'; '.join(verdict.reasons)}")
    earlier = migrations.migrations.get((group, family.name))
    kept = earlier.consumed() if earlier is not None and earlier.step == ROLLED_BACK else {}
    boundary = {tp: Consumed(offset, tuple(r for r in kept[tp].beyond if r[1] > offset) if tp in kept else ())
                for tp, offset in offsets.items()}
    plan = plan_move(scan_family(family.config, family.topics, family.partitions, boundary, progress))
    if plan.unpositioned:
        raise GroupRefused(f"{plan.unpositioned:,} records of {family.name} carry no source position (`src` "
                           "header): their consumers cannot be moved by position")
    result = MoveResult(group, family.name, sorted({t for t, _ in offsets}), boundary, plan, dry_run)
    backfilled = family.backfilled_ends()
    inside = sorted(f"{t}/{p}" for (t, p), offset in offsets.items() if offset < backfilled.get((t, p), 0))
    if inside:
        result.warnings.append(f"the group's position lies inside the backfilled range on {', '.join(inside)}: "
                               f"its first unconsumed record sits in a key-sorted block, so {plan.redelivered:,} "
                               "records it already consumed come again (drop them by the boundary)")
    if dry_run:
        result.seconds = time.monotonic() - started
        return result
    require_empty(family.config, group)
    previous = all_offsets(family.config, group)
    record = Migration(group, family.name, result.sources, MOVING,
                       start_offsets={f"{t}/{p}": o for (t, p), o in plan.start_offsets.items()},
                       previous_offsets={f"{t}/{p}": o for (t, p), o in previous.items()},
                       redelivered=plan.redelivered, new_sources=plan.new_sources,
                       scanned=plan.scanned).with_boundary(boundary)
    write(family.config, family.migrations_topic, record)
    if keep_source_offsets:
        commit(family.config, group, plan.start_offsets)
    else:
        replace_offsets(family.config, group, {**{tp: o for tp, o in previous.items() if tp not in offsets},
                                               **plan.start_offsets})
    record.step = MOVED
    write(family.config, family.migrations_topic, record)
    result.seconds = time.monotonic() - started
    return result

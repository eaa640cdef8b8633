"""`rekey migrate rollback`: move a group back from a family onto the source topics it came from.

Per source partition the group resumes at the smallest source offset among the family's records it has not
consumed (never past the live ACL's committed offset); the records it consumed on the family from there on are
named in the migration record's boundary, so a consumer drops them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kafka_rekey.services.migration.context import Family
from kafka_rekey.services.migration.groups import (
    GroupRefused,
    TopicPartitionKey,
    all_offsets,
    offsets_on,
    replace_offsets,
    require_empty,
)
from kafka_rekey.services.migration.records import MOVED, ROLLED_BACK, ROLLING_BACK, write
from kafka_rekey.services.migration.scanning import Progress, positions
from kafka_rekey.shared.migration import RollbackPlan, covers, plan_rollback
from kafka_rekey.shared.migration.rollback import rollback_offsets


@dataclass
class RollbackResult:
    group: str
    family: str
    plan: RollbackPlan
    scanned: int
    dry_run: bool
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "family": self.family, "dry_run": self.dry_run,
                "source_offsets": {f"{t}/{p}": o for (t, p), o in sorted(self.plan.offsets.items())},
                "redelivered": self.plan.redelivered, "scanned": self.scanned, "seconds": round(self.seconds, 3)}


def rollback_group(family: Family, group: str, *, dry_run: bool = False,
                   progress: Progress | None = None) -> RollbackResult:
    started = time.monotonic()
    record = family.migrations().migrations.get((group, family.name))
    if record is None or record.step != MOVED:
        state = "no migration" if record is None else f"its migration is {record.step}"
        raise GroupRefused(f"group {group!r} has {state} onto {family.name}: nothing to roll back")
    require_empty(family.config, group)
    in_flight = family.in_flight()
    if in_flight:
        raise GroupRefused(f"the sequencing stage holds {in_flight:,} records not yet in {family.name}: wait until "
                           "the ACL has drained them")
    committed = offsets_on(family.config, group, family.partitions)
    before = record.consumed()
    first_unconsumed: dict[TopicPartitionKey, int] = {}
    scanned = 0
    for _topic, _partition, _offset, position in positions(family.config, family.topics, committed,
                                                           progress=progress):
        scanned += 1
        # A record the group had consumed on the source before its move counts as consumed, wherever it lies.
        if position is not None and position.topic in record.sources and not covers(before, position):
            key = (position.topic, position.partition)
            first_unconsumed[key] = min(position.offset, first_unconsumed.get(key, position.offset))
    acl = {tp: o for tp, o in family.acl_offsets().items() if tp[0] in record.sources}
    offsets = rollback_offsets(first_unconsumed, acl)
    consumed = []
    ends = {tp: committed.get(tp, 0) for tp in family.partitions}
    for _topic, _partition, _offset, position in positions(family.config, family.topics, ends=ends,
                                                           progress=progress):
        scanned += 1
        if position is not None:
            consumed.append(((position.topic, position.partition), position.offset))
    plan = plan_rollback(offsets, consumed)
    result = RollbackResult(group, family.name, plan, scanned, dry_run)
    if not dry_run:
        require_empty(family.config, group)
        previous = all_offsets(family.config, group)
        record.step, record.previous_offsets = ROLLING_BACK, {f"{t}/{p}": o for (t, p), o in previous.items()}
        record.start_offsets = {f"{t}/{p}": o for (t, p), o in plan.offsets.items()}
        record.redelivered, record.at_ms = plan.redelivered, int(time.time() * 1000)
        write(family.config, family.migrations_topic, record.with_boundary(plan.boundary))
        on_family = set(family.partitions)
        replace_offsets(family.config, group, {**{tp: o for tp, o in previous.items() if tp not in on_family},
                                               **plan.offsets})
        record.step = ROLLED_BACK
        write(family.config, family.migrations_topic, record)
    result.seconds = time.monotonic() - started
    return result

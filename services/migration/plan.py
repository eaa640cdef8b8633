"""`rekey migrate plan`: the consumer groups with committed offsets on a source, and whether each can move."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kafka_rekey.services.migration.context import Family
from kafka_rekey.services.migration.groups import groups, high_watermarks, members, offsets_on
from kafka_rekey.shared.migration import Readiness


@dataclass(frozen=True)
class GroupPlan:
    group: str
    members: int
    lag: int
    moving: bool
    """Its offsets moved over the watch: a consumer still commits."""
    readiness: Readiness

    @property
    def can_move(self) -> bool:
        return not self.members and not self.moving and self.readiness.ready

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "members": self.members, "lag": self.lag, "offsets_moving": self.moving,
                "ready": self.readiness.ready, "reasons": list(self.readiness.reasons),
                "acl_behind": self.readiness.acl_behind, "can_move": self.can_move}


def plan_groups(family: Family, source: str, watch_seconds: float) -> list[GroupPlan]:
    """Every group but the ACL's with offsets on `source`, watched for `watch_seconds`."""
    partitions = [tp for tp in family.source_partitions if tp[0] == source]
    first = {group: offsets_on(family.config, group, partitions) for group in groups(family.config)
             if group != family.acl_group}
    first = {group: offsets for group, offsets in first.items() if offsets}
    time.sleep(watch_seconds)  # the AdminClient has no commit time: compare two readings
    ends = high_watermarks(family.config, partitions)
    migrations = family.migrations()
    count = members(family.config, sorted(first))
    plans = []
    for group, offsets in sorted(first.items()):
        again = offsets_on(family.config, group, partitions)
        own = offsets_on(family.config, group, family.source_partitions)
        plans.append(GroupPlan(group, count[group], sum(max(0, ends[tp] - offset) for tp, offset in again.items()),
                               again != offsets, family.readiness(own, migrations)))
    return plans

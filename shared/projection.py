"""The org-activity projection: one domain event in, one org-keyed activity record out (pure)."""

from __future__ import annotations

from typing import Any


def org_activity(event: dict[str, Any], topic: str, partition: int, offset: int) -> dict[str, Any]:
    return {
        "org_id": event["org_id"],
        "interaction_id": event["interaction_id"],
        "event_id": event["event_id"],
        "event_type": event["event_type"],
        "event_time": event["event_time"],
        "sequence": event["sequence"],
        "domain_topic": topic,
        "domain_partition": partition,
        "domain_offset": offset,
    }

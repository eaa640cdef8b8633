"""Decide, for a batch of released events, what the sink writes: the pure core of the idempotent sink.

Every event ends in exactly one place: the applied-events history (and, when its version is the newest of its
interaction, the table row), the corrections table, or a counted duplicate skip.

- An event whose (output key, sequence, event id) is already stored is a duplicate.
- A different event claiming an applied (output key, sequence) is a sequence conflict: it goes to corrections.
- An event older than the watermark goes to corrections (`beyond_watermark`).
- Otherwise it joins the history; it moves the table row only if its version beats the stored one ("stale"
  otherwise: recorded, but an older or equal version never overwrites newer state).

In repair mode (a reconciliation rewind) the watermark is bypassed and applied history rows are rewritten from
the domain topic, which is the source of truth; events already in corrections stay there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kafka_rekey.shared.sink.events import Interaction, SinkEvent, Version
from kafka_rekey.shared.sink.watermark import Watermark


class Placement(StrEnum):
    APPLIED = "applied"
    CORRECTION = "correction"


class Outcome(StrEnum):
    APPLIED = "applied"
    """Recorded and moved the table row forward."""
    STALE = "stale"
    """Recorded in the history, but the table row already holds a newer version."""
    DUPLICATE = "duplicate"
    """Already stored (same output key, sequence and event id): skipped."""
    CORRECTION = "correction"
    """Written to the corrections table."""
    REWRITTEN = "rewritten"
    """Repair mode: an applied history row rewritten from the domain topic."""


class CorrectionReason(StrEnum):
    BEYOND_WATERMARK = "beyond_watermark"
    SEQUENCE_CONFLICT = "sequence_conflict"


@dataclass(frozen=True, slots=True)
class Correction:
    event: SinkEvent
    reason: CorrectionReason
    watermark: int | None


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store already holds for the batch's output keys and sequences."""

    placements: Mapping[tuple[str, int, str], Placement]
    """(output_key, sequence, event_id) -> where that event is."""
    applied_ids: Mapping[tuple[str, int], str]
    """(output_key, sequence) -> event id of the applied event in that slot."""
    versions: Mapping[Interaction, Version]
    """Version of the table row of each interaction of the batch that has one."""


@dataclass(slots=True)
class BatchPlan:
    history: list[SinkEvent] = field(default_factory=list)
    rows: dict[Interaction, SinkEvent] = field(default_factory=dict)
    """Newest event per interaction that beats the stored row (upserted with the version guard)."""
    corrections: list[Correction] = field(default_factory=list)
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    watermark: Watermark = field(default_factory=lambda: Watermark(None))
    repair: bool = False

    @property
    def touched(self) -> set[Interaction]:
        """Interactions whose history changed (their event counts, or in repair their rows, are refreshed)."""
        return {event.interaction for event in self.history}


def plan_batch(events: Iterable[SinkEvent], stored: Stored, watermark: Watermark,
               repair: bool = False) -> BatchPlan:
    plan = BatchPlan(watermark=watermark, repair=repair)
    placements = dict(stored.placements)
    applied_ids = dict(stored.applied_ids)
    versions = dict(stored.versions)
    planned: set[tuple[str, int, str]] = set()
    for event in events:
        identity = (event.output_key, event.sequence, event.event_id)
        placement = placements.get(identity)
        holder = applied_ids.get(event.slot)
        if placement is Placement.CORRECTION or (placement is Placement.APPLIED and not repair) or identity in planned:
            plan.outcomes[Outcome.DUPLICATE] += 1
        elif holder is not None and not repair:
            _correct(plan, placements, event, CorrectionReason.SEQUENCE_CONFLICT)
        elif not repair and not plan.watermark.admits(event.event_time):
            _correct(plan, placements, event, CorrectionReason.BEYOND_WATERMARK)
        else:
            if holder is not None:
                placements.pop((event.output_key, event.sequence, holder), None)
            placements[identity] = Placement.APPLIED
            applied_ids[event.slot] = event.event_id
            planned.add(identity)
            plan.history.append(event)
            current = versions.get(event.interaction)
            if holder is not None:
                plan.outcomes[Outcome.REWRITTEN] += 1
            elif current is None or event.version > current:
                plan.outcomes[Outcome.APPLIED] += 1
            else:
                plan.outcomes[Outcome.STALE] += 1
            if current is None or event.version > current:
                versions[event.interaction] = event.version
                plan.rows[event.interaction] = event
        plan.watermark = plan.watermark.observe(event.event_time)
    return plan


def _correct(plan: BatchPlan, placements: dict[tuple[str, int, str], Placement], event: SinkEvent,
             reason: CorrectionReason) -> None:
    placements[(event.output_key, event.sequence, event.event_id)] = Placement.CORRECTION
    plan.corrections.append(Correction(event, reason, plan.watermark.safe_up_to))
    plan.outcomes[Outcome.CORRECTION] += 1

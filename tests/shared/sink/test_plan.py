"""Batch planning: every event ends in exactly one place, and order or duplicates never change the result."""

from __future__ import annotations

import random

from kafka_rekey.shared.sink.plan import BatchPlan, CorrectionReason, Outcome, Placement, Stored, plan_batch
from kafka_rekey.shared.sink.state import derive_state
from kafka_rekey.shared.sink.watermark import Watermark
from tests.shared.sink.builders import event

NOTHING = Stored({}, {}, {})


def _stored_after(plans: list[BatchPlan]) -> Stored:
    placements: dict[tuple[str, int, str], Placement] = {}
    applied: dict[tuple[str, int], str] = {}
    for plan in plans:
        for e in plan.history:
            placements[(e.output_key, e.sequence, e.event_id)] = Placement.APPLIED
            applied[e.slot] = e.event_id
        for c in plan.corrections:
            placements[(c.event.output_key, c.event.sequence, c.event.event_id)] = Placement.CORRECTION
    versions = {i: r.latest.version for i, r in derive_state(e for p in plans for e in p.history).items()}
    return Stored(placements, applied, versions)


def test_newest_version_wins_and_older_is_kept_as_stale() -> None:
    plan = plan_batch([event(sequence=2), event(sequence=1), event(sequence=2)], NOTHING, Watermark(None))
    assert plan.outcomes == {Outcome.APPLIED: 1, Outcome.STALE: 1, Outcome.DUPLICATE: 1}
    assert [e.sequence for e in plan.history] == [2, 1]
    assert plan.rows[("o1", "i1")].sequence == 2


def test_shuffled_with_duplicates_equals_one_clean_pass() -> None:
    clean = [event(f"i{i}", s) for i in range(5) for s in range(1, 6)]
    messy = clean + random.Random(7).sample(clean, 10)
    random.Random(3).shuffle(messy)
    first = plan_batch(messy[:20], NOTHING, Watermark(None))
    second = plan_batch(messy[20:], _stored_after([first]), Watermark(None))
    replay = plan_batch(messy, _stored_after([first, second]), Watermark(None))
    assert replay.history == [] and replay.outcomes == {Outcome.DUPLICATE: len(messy)}
    messy_state = derive_state([*first.history, *second.history])
    assert messy_state == derive_state(clean)


def test_events_beyond_the_watermark_go_to_corrections() -> None:
    watermark = Watermark(delta_ms=5000)
    plan = plan_batch([event("a", 1, event_time=100_000), event("b", 1, event_time=96_000),
                       event("c", 1, event_time=94_999)], NOTHING, watermark)
    assert [e.interaction_id for e in plan.history] == ["a", "b"]
    (correction,) = plan.corrections
    assert correction.event.interaction_id == "c"
    assert (correction.reason, correction.watermark) == (CorrectionReason.BEYOND_WATERMARK, 95_000)
    assert plan.watermark.max_event_time == 100_000


def test_a_different_event_in_an_applied_slot_is_a_conflict_correction() -> None:
    stored = Stored({("o1:i1", 1, "e1"): Placement.APPLIED}, {("o1:i1", 1): "e1"}, {("o1", "i1"): (1, 1)})
    plan = plan_batch([event(sequence=1, event_id="other")], stored, Watermark(None))
    assert plan.history == []
    assert [c.reason for c in plan.corrections] == [CorrectionReason.SEQUENCE_CONFLICT]


def test_repair_rewrites_applied_slots_bypasses_the_watermark_and_keeps_corrections() -> None:
    stored = Stored(
        {("o1:i1", 1, "tampered"): Placement.APPLIED, ("o1:i1", 2, "o1-i1-2"): Placement.CORRECTION},
        {("o1:i1", 1): "tampered"}, {("o1", "i1"): (999_999_999, 9)},
    )
    old = Watermark(1000, max_event_time=10_000_000)
    plan = plan_batch([event(sequence=1), event(sequence=2), event(sequence=3)], stored, old, repair=True)
    assert [e.sequence for e in plan.history] == [1, 3]
    assert plan.outcomes == {Outcome.REWRITTEN: 1, Outcome.DUPLICATE: 1, Outcome.STALE: 1}
    assert plan.touched == {("o1", "i1")}

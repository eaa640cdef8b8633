"""Windowed digests ignore order and duplicates and pinpoint the (org, window) that differs."""

from __future__ import annotations

from kafka_rekey.shared.reconciliation.audit import compare, digest_windows, event_record, window_start
from kafka_rekey.shared.reconciliation.events import reconciliation_required
from tests.shared.sink.builders import event

HOUR = 3_600_000


def test_digest_is_order_and_duplicate_insensitive() -> None:
    events = [event(f"i{i}", s, event_time=i * 1000 + s) for i in range(10) for s in range(1, 4)]
    forward = digest_windows([event_record(e) for e in events], HOUR)
    backward = digest_windows([event_record(e) for e in reversed(events + events[:5])], HOUR)
    assert forward == backward
    assert forward[("o1", 0)].count == 30


def test_a_changed_or_missing_record_is_reported_for_its_org_and_window() -> None:
    events = [event(f"i{i}", 1, org=org, event_time=t) for i in range(3) for org in ("o1", "o2")
              for t in (10, HOUR + 10)]
    left = digest_windows([event_record(e) for e in events], HOUR)
    tampered = [e if (e.org_id, e.event_time, e.interaction_id) != ("o2", HOUR + 10, "i1")
                else event("i1", 1, org="o2", event_time=HOUR + 10, event_type="end") for e in events]
    right = digest_windows([event_record(e) for e in tampered[1:]], HOUR)
    mismatches = compare("domain_vs_sink", "domain", left, "sink", right, HOUR)
    assert [(m.org_id, m.window_start, m.window_end) for m in mismatches] == [
        ("o1", 0, HOUR), ("o2", HOUR, 2 * HOUR)]
    assert (mismatches[0].left.count, mismatches[0].right.count) == (3, 2)
    assert mismatches[1].left.count == mismatches[1].right.count == 3
    assert mismatches[1].left.checksum != mismatches[1].right.checksum
    message = reconciliation_required(mismatches[0], detected_at=5, repaired=False)
    assert (message["window_start"], message["window_end"], message["sides"][1]["count"]) == (0, HOUR, 2)
    assert message["request_id"] == reconciliation_required(mismatches[0], detected_at=9, repaired=True)["request_id"]


def test_window_start_floors_to_the_window() -> None:
    assert window_start(HOUR * 3 + 5, HOUR) == HOUR * 3

"""Offsets are committable only up to the first record not yet settled in the database."""

from __future__ import annotations

from kafka_rekey.shared.sink.offsets import OffsetTracker


def test_position_stops_at_the_first_unsettled_record() -> None:
    tracker = OffsetTracker()
    for offset in range(5):
        tracker.consumed(0, offset)
    tracker.consumed(1, 7)
    for offset in (0, 1, 3, 4):
        tracker.settled(0, offset)
    assert tracker.positions() == {0: 2, 1: 7}
    tracker.mark_committed({0: 2, 1: 7})
    assert tracker.positions() == {}
    tracker.settled(0, 2)
    tracker.settled(1, 7)
    assert tracker.positions() == {0: 5, 1: 8}
    tracker.forget([0])
    assert tracker.positions() == {1: 8}

"""The reorder buffer holds a key's events until the previous sequence arrives, within bounded memory/time."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.sink.reorder import GapReason, ReorderBuffer


def _buffer(max_held: int = 100, timeout_s: float = 10.0) -> ReorderBuffer[str]:
    buffer: ReorderBuffer[str] = ReorderBuffer(max_held, timeout_s)
    buffer.learn("k", 0)
    buffer.learn("j", 0)
    return buffer


def test_holds_until_the_previous_sequence_arrives_then_releases_in_order() -> None:
    buffer = _buffer()
    assert buffer.offer("k", 3, "k3", now=0).items == []
    assert buffer.offer("k", 2, "k2", now=0).items == []
    assert buffer.offer("j", 1, "j1", now=0).items == ["j1"]
    assert buffer.held_count == 2
    assert buffer.offer("k", 1, "k1", now=1).items == ["k1", "k2", "k3"]
    assert buffer.held_count == 0


def test_duplicates_and_late_events_pass_straight_through() -> None:
    buffer = _buffer()
    buffer.offer("k", 1, "k1", now=0)
    assert buffer.offer("k", 1, "k1-again", now=0).items == ["k1-again"]


def test_learnt_position_is_respected() -> None:
    buffer: ReorderBuffer[str] = ReorderBuffer(10, 1.0)
    buffer.learn("k", 41)
    assert buffer.offer("k", 42, "k42", now=0).items == ["k42"]
    with pytest.raises(KeyError, match="before its last sequence was learnt"):
        buffer.offer("unknown", 1, "x", now=0)


def test_timeout_releases_and_reports_the_gap() -> None:
    buffer = _buffer(timeout_s=5.0)
    buffer.offer("k", 3, "k3", now=0)
    buffer.offer("k", 4, "k4", now=1)
    assert buffer.expire(now=4.9).items == []
    release = buffer.expire(now=5.0)
    assert release.items == ["k3", "k4"]
    (gap,) = release.gaps
    assert (gap.key, gap.expected, gap.released, gap.reason, gap.waited_s) == ("k", 1, 3, GapReason.TIMEOUT, 5.0)
    assert buffer.offer("k", 5, "k5", now=6).items == ["k5"]
    assert buffer.offer("k", 2, "k2-late", now=7).items == ["k2-late"]


def test_overflow_releases_the_oldest_held_event() -> None:
    buffer = _buffer(max_held=2)
    buffer.offer("k", 5, "k5", now=0)
    buffer.offer("j", 3, "j3", now=1)
    release = buffer.offer("j", 4, "j4", now=2)
    assert release.items == ["k5"]
    assert [(g.key, g.expected, g.released, g.reason) for g in release.gaps] == [("k", 1, 5, GapReason.OVERFLOW)]
    assert buffer.held_count == 2


def test_drop_removes_held_events_of_revoked_partitions() -> None:
    buffer = _buffer()
    buffer.offer("k", 2, "p0:k2", now=0)
    buffer.offer("j", 2, "p1:j2", now=0)
    assert buffer.drop(lambda item: item.startswith("p0")) == 1
    assert buffer.held_count == 1
    assert buffer.expire(now=100).items == ["p1:j2"]

"""The watermark admits events within delta of the newest event time seen."""

from __future__ import annotations

from kafka_rekey.shared.sink.watermark import Watermark


def test_admits_within_delta_and_refuses_older() -> None:
    mark = Watermark(delta_ms=1000).observe(10_000)
    assert mark.safe_up_to == 9000
    assert mark.admits(9000)
    assert mark.admits(12_000)
    assert not mark.admits(8999)
    assert mark.observe(5000) == mark


def test_disabled_or_empty_admits_everything() -> None:
    assert Watermark(None).observe(10_000).admits(0)
    assert Watermark(1000).admits(0)

"""Partition sizing and skew headroom."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.planning import required_partitions, skew_headroom


@pytest.mark.parametrize(("peak", "target", "headroom", "expected"), [
    (10_000, 1_000, 1.0, 10),
    (10_001, 1_000, 1.0, 11),
    (10_000, 1_000, 1.5, 15),
    (10_001, 1_000, 2.0, 22),
    (1, 5_000, 1.0, 1),
    (0, 5_000, 2.0, 1),
])
def test_required_partitions(peak: float, target: float, headroom: float, expected: int) -> None:
    assert required_partitions(peak, target, headroom) == expected


@pytest.mark.parametrize(("args", "message"), [
    ((-1, 1000), "peak rate must be >= 0"),
    ((10, 0), "per-partition target must be > 0"),
    ((10, 10, 0.5), "headroom must be >= 1"),
])
def test_invalid_sizing_inputs(args: tuple[float, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        required_partitions(*args)


def test_skew_headroom_grows_with_skew() -> None:
    assert skew_headroom(1.0) == 1.0
    assert skew_headroom(1.6) == 1.5
    assert skew_headroom(4.0) == 2.0

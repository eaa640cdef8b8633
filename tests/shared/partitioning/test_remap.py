"""How many keys move on a partition-count change."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.partitioning import moved_keys, partition_for


def test_same_partition_count_moves_nothing() -> None:
    keys = [f"org-{i}:interaction-{i}".encode() for i in range(500)]
    assert moved_keys(keys, 8, 8) == (0, 500)


def test_doubling_moves_about_half_the_keys() -> None:
    keys = [f"org-{i % 50}:interaction-{i}".encode() for i in range(10_000)]
    moved, total = moved_keys(keys, 8, 16)
    assert total == 10_000
    assert 4_500 < moved < 5_500


@given(st.lists(st.text(min_size=1, max_size=30), max_size=50), st.integers(1, 64), st.integers(1, 64))
def test_moved_count_is_the_keys_whose_partition_differs(keys: list[str], old: int, new: int) -> None:
    expected = sum(partition_for(k, old) != partition_for(k, new) for k in keys)
    assert moved_keys([k.encode() for k in keys], old, new) == (expected, len(keys))


def test_refuses_zero_partitions() -> None:
    with pytest.raises(ValueError, match="partition counts must be >= 1, got 0 -> 4"):
        moved_keys([b"k"], 0, 4)

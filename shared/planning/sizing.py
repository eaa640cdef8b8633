"""Partition sizing: enough partitions for the peak rate at a per-partition target, plus headroom for skew."""

from __future__ import annotations

import math

SKEW_FREE = 1.2  # max/mean partition rate up to which load counts as even
HEAVY_SKEW = 2.0  # beyond this, the largest headroom


def skew_headroom(skew_ratio: float) -> float:
    """Headroom factor for a max/mean partition-rate ratio: 1.0 when even, 1.5 when skewed, 2.0 when heavily."""
    if skew_ratio <= SKEW_FREE:
        return 1.0
    return 1.5 if skew_ratio <= HEAVY_SKEW else 2.0


def required_partitions(peak_rate: float, per_partition_target: float, headroom: float = 1.0) -> int:
    """ceil(peak events/s / per-partition target) x headroom, rounded up; at least 1."""
    if peak_rate < 0:
        raise ValueError(f"peak rate must be >= 0 events/s, got {peak_rate}")
    if per_partition_target <= 0:
        raise ValueError(f"per-partition target must be > 0 events/s, got {per_partition_target}")
    if headroom < 1:
        raise ValueError(f"headroom must be >= 1, got {headroom}")
    return max(1, math.ceil(math.ceil(peak_rate / per_partition_target) * headroom))

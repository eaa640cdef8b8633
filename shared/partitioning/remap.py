"""What a partition-count change does to keyed data: how many keys would land on another partition."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_rekey.shared.partitioning.murmur2 import murmur2, to_positive


def moved_keys(keys: Iterable[bytes], old_partitions: int, new_partitions: int) -> tuple[int, int]:
    """(keys whose partition changes from `old_partitions` to `new_partitions`, keys examined).

    Keys are the serialized key bytes as they are on the topic (for rekey's topics: the UTF-8 logical key).
    """
    if old_partitions < 1 or new_partitions < 1:
        raise ValueError(f"partition counts must be >= 1, got {old_partitions} -> {new_partitions}")
    moved = total = 0
    for key in keys:
        hashed = to_positive(murmur2(key))
        total += 1
        moved += hashed % old_partitions != hashed % new_partitions
    return moved, total

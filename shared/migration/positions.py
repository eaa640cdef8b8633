"""What a group has consumed of each source partition, and whether a source position is among it."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_rekey.shared.sequencing import SourcePosition


@dataclass(frozen=True)
class Consumed:
    """One source partition: every offset below `below`, and the [start, end) ranges of `beyond` at or above it.

    A group's committed offset on the source is a `below` alone. A rollback adds `beyond`: records the group
    consumed on the family whose source offsets lie past the rollback offset, because the family's partitions
    interleave the source's."""

    below: int
    beyond: tuple[tuple[int, int], ...] = field(default=())

    def covers(self, offset: int) -> bool:
        if offset < self.below:
            return True
        index = bisect.bisect_right(self.beyond, offset, key=lambda span: span[0]) - 1
        return index >= 0 and offset < self.beyond[index][1]


Boundary = Mapping[tuple[str, int], Consumed]
"""(source topic, partition) -> what the group consumed there; a partition it never read is absent."""


def covers(boundary: Boundary, position: SourcePosition) -> bool:
    """Whether the group consumed the source record at `position` (a partition it never read: no)."""
    consumed = boundary.get((position.topic, position.partition))
    return consumed is not None and consumed.covers(position.offset)


def ranges(offsets: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """Sorted, merged [start, end) ranges holding exactly `offsets`."""
    merged: list[list[int]] = []
    for offset in sorted(set(offsets)):
        if merged and merged[-1][1] == offset:
            merged[-1][1] = offset + 1
        else:
            merged.append([offset, offset + 1])
    return tuple((start, end) for start, end in merged)


def boundary_to_json(boundary: Boundary) -> dict[str, Any]:
    return {f"{topic}/{partition}": {"below": consumed.below, "beyond": [list(r) for r in consumed.beyond]}
            for (topic, partition), consumed in sorted(boundary.items())}


def boundary_from_json(data: Mapping[str, Any]) -> dict[tuple[str, int], Consumed]:
    boundary = {}
    for name, consumed in data.items():
        topic, _, partition = name.rpartition("/")
        beyond = tuple((int(start), int(end)) for start, end in consumed.get("beyond", ()))
        boundary[(topic, int(partition))] = Consumed(int(consumed["below"]), beyond)
    return boundary

"""Deterministic source order and dense sequence assignment over a batch (the backfill's rule).

Source order is the source ordering token (CDC LSN, or event time in ms), ties broken by source partition and
offset. Within one output key, sequences run 1, 2, 3, ... in that order, or continue from a hand-off value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

import msgspec

T = TypeVar("T")


class SourcePosition(msgspec.Struct, frozen=True, order=True, gc=False):
    """Where a source record was read; rendered as the `src` header `topic/partition/offset`."""

    topic: str
    partition: int
    offset: int

    def header(self) -> str:
        return f"{self.topic}/{self.partition}/{self.offset}"

    @classmethod
    def parse(cls, header: str) -> SourcePosition:
        topic, partition, offset = header.rsplit("/", 2)
        return cls(topic, int(partition), int(offset))


def source_order(ordering_token: int, position: SourcePosition) -> tuple[int, int, int, str]:
    """Sort key giving the deterministic source order of a record."""
    return (ordering_token, position.partition, position.offset, position.topic)


def assign_sequences(
    keyed: Iterable[tuple[str, tuple[int, int, int, str], str, T]],
    start_after: Mapping[str, int] | None = None,
) -> list[tuple[str, int, T]]:
    """Number `(key, order, dedupe_id, item)` rows densely per key in source order.

    Rows repeating a `dedupe_id` already numbered for the key are dropped (upstream duplicates: the first in
    source order wins). Numbering continues after `start_after[key]` when given (a hand-off).
    """
    by_key: dict[str, list[tuple[tuple[int, int, int, str], str, T]]] = {}
    for key, order, dedupe_id, item in keyed:
        by_key.setdefault(key, []).append((order, dedupe_id, item))
    numbered: list[tuple[str, int, T]] = []
    offsets = start_after or {}
    for key, rows in by_key.items():
        rows.sort(key=lambda row: row[0])
        seen: set[str] = set()
        sequence = offsets.get(key, 0)
        for _order, dedupe_id, item in rows:
            if dedupe_id in seen:
                continue
            seen.add(dedupe_id)
            sequence += 1
            numbered.append((key, sequence, item))
    return numbered

"""The live service's per-event duplicate decision.

The live sequencer remembers, per dedupe id, the sequence it gave and the source position it came from:
- a new dedupe id gets the next sequence (Fresh);
- the same dedupe id from the same source position is a Kafka redelivery (a crash between producing and
  committing): it is emitted again with its original sequence, so nothing is lost and nothing renumbered;
- the same dedupe id from another position is an upstream duplicate: counted and skipped.
"""

from __future__ import annotations

import msgspec


class SeenEntry(msgspec.Struct, frozen=True, gc=False):
    sequence: int
    source: str


class Fresh(msgspec.Struct, frozen=True, gc=False):
    sequence: int


class Redelivered(msgspec.Struct, frozen=True, gc=False):
    sequence: int


class Duplicate(msgspec.Struct, frozen=True, gc=False):
    sequence: int
    first_source: str


Decision = Fresh | Redelivered | Duplicate


def decide(seen: SeenEntry | None, last_sequence: int, source: str) -> Decision:
    if seen is None:
        return Fresh(last_sequence + 1)
    if seen.source == source:
        return Redelivered(seen.sequence)
    return Duplicate(seen.sequence, seen.source)

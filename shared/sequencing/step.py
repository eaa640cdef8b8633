"""The live sequencer's step function: one envelope against one key's state, the new state and what to emit.

The state of one output key is its last sequence (`None` when the live service never sequenced the key: it then
continues from the backfill's hand-off value) and, per dedupe id, the `SeenEntry` remembered for it. The runtime
only loads and stores that state; every rule lives here (and in `decide`).
"""

from __future__ import annotations

import msgspec

from kafka_rekey.shared.sequencing.decisions import Decision, Fresh, SeenEntry, decide


class Step(msgspec.Struct, frozen=True, gc=False):
    """The decision, and the state to store: `last` and `seen` are None where nothing changed."""

    decision: Decision
    last: int | None
    seen: SeenEntry | None


def sequence_step(last: int | None, handoff_last: int, seen: SeenEntry | None, source: str) -> Step:
    """Decide one envelope of a key from `source` (its `topic/partition/offset`).

    A fresh dedupe id takes the next sequence and is remembered with its source; a redelivery (same id, same
    source) keeps its first sequence and changes nothing; an upstream duplicate (same id, other source) is
    dropped and changes nothing.
    """
    decision = decide(seen, handoff_last if last is None else last, source)
    if isinstance(decision, Fresh):
        return Step(decision, decision.sequence, SeenEntry(decision.sequence, source))
    return Step(decision, None, None)

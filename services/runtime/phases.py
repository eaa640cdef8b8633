"""A checkpoint's phases as one state with the transitions allowed between them (as Kafka Streams'
`StreamThread.State`): the worker asks the state where a checkpoint is, and a step taken out of order raises
instead of leaving a checkpoint half in two phases.

IDLE -> DRAINING (`Checkpoint.commit`: changelog produced; exactly-once, the transaction being committed on a
helper thread, or committed when final)
DRAINING -> COMMITTING (at-least-once: everything before it delivered, its offsets committed on a helper thread)
DRAINING -> IDLE (exactly-once: the transaction committed; or its offsets committed on the loop: a final checkpoint)
COMMITTING -> IDLE (the helper's commit returned)
COMMITTING -> FOLDED (a final checkpoint commits those offsets again itself: `Checkpoint.fold_commit`)
FOLDED -> DRAINING (that final checkpoint)
any -> IDLE (`reset`: the uncommitted work was dropped)
"""

from __future__ import annotations

from enum import Enum


class Phase(Enum):
    IDLE = "idle"
    DRAINING = "draining"
    COMMITTING = "committing"
    FOLDED = "folded"


ALLOWED: dict[Phase, frozenset[Phase]] = {
    Phase.IDLE: frozenset({Phase.DRAINING}),
    Phase.DRAINING: frozenset({Phase.COMMITTING, Phase.IDLE}),
    Phase.COMMITTING: frozenset({Phase.IDLE, Phase.FOLDED}),
    Phase.FOLDED: frozenset({Phase.DRAINING}),
}


class IllegalTransition(RuntimeError):
    """A checkpoint step taken in a phase that does not allow it: a bug in the caller, not a Kafka failure."""


class CheckpointState:
    """Where the checkpoint under way is; `to` moves it, `reset` drops it from whatever phase."""

    def __init__(self) -> None:
        self.phase = Phase.IDLE

    def to(self, phase: Phase) -> None:
        if phase not in ALLOWED[self.phase]:
            raise IllegalTransition(f"checkpoint phase {self.phase.value} -> {phase.value} is not allowed")
        self.phase = phase

    def reset(self) -> None:
        self.phase = Phase.IDLE

    def require(self, *phases: Phase) -> None:
        """Raise unless the checkpoint is in one of `phases` (a step that reads that phase's work)."""
        if self.phase not in phases:
            raise IllegalTransition(f"checkpoint is {self.phase.value}, not {' or '.join(p.value for p in phases)}")

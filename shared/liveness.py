"""Whether a worker is alive, as its liveness probe asks: its loop turns, or the restore it is in makes progress.

A restore holds the loop (it runs inside the assignment callback), so "the loop turned lately" alone would call a
long restore dead and let the probe restart the pod into the same restore from scratch; a restore that reads
nothing for a while is stuck, though, and a restart may be what clears it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LivenessLimits:
    loop_s: float
    """Longest time between two turns of the loop outside a restore (REKEY_LIVENESS_S)."""
    restore_stall_s: float
    """Longest time a restore may go without reading a changelog record (REKEY_RESTORE_STALL_S)."""


def unhealthy_reason(now: float, last_loop: float, restoring: bool, restore_advanced: float,
                     limits: LivenessLimits) -> str | None:
    """Why the worker is not alive at `now` (monotonic seconds), or None when it is. `last_loop`: when its loop
    last turned; `restore_advanced`: when the restore under way started or last read a record."""
    if restoring:
        stalled = now - restore_advanced
        if stalled > limits.restore_stall_s:
            return (f"the restore has read nothing for {stalled:.0f}s "
                    f"(REKEY_RESTORE_STALL_S={limits.restore_stall_s:g})")
        return None
    idle = now - last_loop
    if idle > limits.loop_s:
        return f"the loop has not turned for {idle:.0f}s (REKEY_LIVENESS_S={limits.loop_s:g})"
    return None

"""The sequences horizon: when the live sequencer forgets an idle key, and what a later event of that key gets.

A key's state is its last sequence and when it was last sequenced. Once it has been idle for longer than the
horizon, its state is replaced by a forgotten record: the same last sequence under a short digest of the key
instead of the key itself. A later event of the key continues its numbering from that record (the consumers
already hold 1..n; it gets n + 1, never 1 again), and the key's full state is back. A key with neither state nor
forgotten record was never sequenced live: it continues from the backfill's hand-off value (0 when none).
"""

from __future__ import annotations

import hashlib

import msgspec

DAY_MS = 86_400_000
FORGOTTEN_PREFIX = b"\x00forgotten:"
DIGEST_BYTES = 12
"""Of the key's BLAKE2b digest in its forgotten record: two keys of one sequencing partition sharing one would
make the second continue from the first's number, and at this length that takes far more keys than a partition
holds."""


class KeyState(msgspec.Struct, frozen=True, gc=False):
    last: int
    touched_ms: int | None
    """When the key was last sequenced; None for state written before the horizon existed."""


def forgotten_key(key: bytes) -> bytes:
    """The key of `key`'s forgotten record: a prefix no output key starts with, and a digest of the key."""
    return FORGOTTEN_PREFIX + hashlib.blake2b(key, digest_size=DIGEST_BYTES).digest()


def is_forgotten_record(key: bytes) -> bool:
    return key.startswith(FORGOTTEN_PREFIX)


def is_idle(state: KeyState, now_ms: int, idle_ms: int) -> bool:
    """Whether the key has been idle for longer than `idle_ms`; state older than the horizon counts as idle."""
    return state.touched_ms is None or now_ms - state.touched_ms > idle_ms


def continued_from(state: KeyState | None, forgotten_last: int | None, handoff_last: int) -> int | None:
    """The last sequence a key's next event continues from: its state's, else its forgotten record's; None when it
    has neither (the caller continues from `handoff_last`, the backfill's value, as for any key new to it)."""
    if state is not None:
        return state.last
    if forgotten_last is not None:
        return max(forgotten_last, handoff_last)
    return None

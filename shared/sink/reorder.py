"""Per-key reorder buffer: hold an event until its key's previous sequence has been released.

Sequences are dense per output key (1, 2, 3, ...). An event whose sequence is the key's next one is released at
once, together with any held successors; a later one is held; an earlier one (duplicate or late arrival) is
released at once, since the sink's version guard makes it harmless. Memory is bounded: past `max_held` held
events the oldest held event is released anyway, and an event held longer than `timeout_s` is released too;
both are reported as a `Gap` naming the key and the missing sequences.

The buffer must learn each key's last released sequence (`learn`) before the key's first `offer`; keys with no
held event are forgotten beyond `max_keys` (least recently used first) and must then be learnt again.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

T = TypeVar("T")


class GapReason(StrEnum):
    TIMEOUT = "timeout"
    OVERFLOW = "overflow"


@dataclass(frozen=True, slots=True)
class Gap:
    """Sequences `expected` .. `released - 1` of `key` never arrived; `released` was let through anyway."""

    key: str
    expected: int
    released: int
    reason: GapReason
    waited_s: float


@dataclass(slots=True)
class Release(Generic[T]):
    items: list[T] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)


@dataclass(slots=True)
class _Held(Generic[T]):
    sequence: int
    arrived_at: float
    items: list[T]


class ReorderBuffer(Generic[T]):
    def __init__(self, max_held: int, timeout_s: float, max_keys: int = 100_000):
        if max_held < 1:
            raise ValueError(f"reorder buffer max_held must be 1 or more, got {max_held}")
        if timeout_s <= 0:
            raise ValueError(f"reorder buffer timeout must be positive, got {timeout_s}s")
        self.max_held = max_held
        self.timeout_s = timeout_s
        self.max_keys = max_keys
        self._next: OrderedDict[str, int] = OrderedDict()
        self._held: dict[str, dict[int, _Held[T]]] = {}
        self._arrivals: deque[tuple[float, str, int]] = deque()
        self._held_count = 0

    @property
    def held_count(self) -> int:
        return self._held_count

    def knows(self, key: str) -> bool:
        return key in self._next

    def learn(self, key: str, last_sequence: int) -> None:
        """Tell the buffer the last sequence of `key` already released (0 for a new key)."""
        if key not in self._next:
            self._next[key] = last_sequence + 1
            self._forget_idle_keys()

    def offer(self, key: str, sequence: int, item: T, now: float) -> Release[T]:
        if key not in self._next:
            raise KeyError(f"reorder buffer: key {key!r} offered before its last sequence was learnt")
        self._next.move_to_end(key)
        release: Release[T] = Release()
        expected = self._next[key]
        if sequence < expected:
            release.items.append(item)
        elif sequence == expected:
            release.items.append(item)
            self._next[key] = sequence + 1
            self._cascade(key, release)
        else:
            self._hold(key, sequence, item, now)
            if self._held_count > self.max_held:
                self._release_oldest(now, GapReason.OVERFLOW, release)
        return release

    def expire(self, now: float) -> Release[T]:
        """Release every event held for `timeout_s` or longer, reporting the gaps."""
        release: Release[T] = Release()
        while self._arrivals:
            arrived_at, key, sequence = self._arrivals[0]
            if not self._is_held(key, sequence, arrived_at):
                self._arrivals.popleft()
            elif now - arrived_at >= self.timeout_s:
                self._release_oldest(now, GapReason.TIMEOUT, release)
            else:
                break
        return release

    def drop(self, matches: Callable[[T], bool]) -> int:
        """Remove held events for which `matches` is true (e.g. of revoked partitions); return how many."""
        dropped = 0
        for key in list(self._held):
            for sequence, held in list(self._held[key].items()):
                kept = [item for item in held.items if not matches(item)]
                dropped += len(held.items) - len(kept)
                if kept:
                    held.items = kept
                else:
                    del self._held[key][sequence]
            if not self._held[key]:
                del self._held[key]
        self._held_count -= dropped
        return dropped

    def forget_keys(self) -> None:
        """Forget every key's last sequence (held events stay); keys must be learnt again before offers."""
        for key in [k for k in self._next if k not in self._held]:
            del self._next[key]

    # -- internals -----------------------------------------------------------------------------------
    def _hold(self, key: str, sequence: int, item: T, now: float) -> None:
        slots = self._held.setdefault(key, {})
        if sequence in slots:
            slots[sequence].items.append(item)
        else:
            slots[sequence] = _Held(sequence, now, [item])
            self._arrivals.append((now, key, sequence))
        self._held_count += 1

    def _is_held(self, key: str, sequence: int, arrived_at: float) -> bool:
        held = self._held.get(key, {}).get(sequence)
        return held is not None and held.arrived_at == arrived_at

    def _take(self, key: str, sequence: int) -> list[T]:
        items = self._held[key].pop(sequence).items
        if not self._held[key]:
            del self._held[key]
        self._held_count -= len(items)
        return items

    def _cascade(self, key: str, release: Release[T]) -> None:
        while key in self._held and self._next[key] in self._held[key]:
            sequence = self._next[key]
            release.items.extend(self._take(key, sequence))
            self._next[key] = sequence + 1

    def _release_oldest(self, now: float, reason: GapReason, release: Release[T]) -> None:
        """Give up waiting on the key of the oldest held event: release its lowest held sequence onwards."""
        while self._arrivals:
            arrived_at, key, sequence = self._arrivals.popleft()
            if self._is_held(key, sequence, arrived_at):
                break
        else:
            return
        lowest = min(self._held[key])
        waited = now - self._held[key][lowest].arrived_at
        release.gaps.append(Gap(key, self._next[key], lowest, reason, waited))
        if lowest != sequence:
            self._arrivals.appendleft((arrived_at, key, sequence))
        release.items.extend(self._take(key, lowest))
        self._next[key] = lowest + 1
        self._cascade(key, release)

    def _forget_idle_keys(self) -> None:
        while len(self._next) > self.max_keys:
            idle = next((k for k in self._next if k not in self._held), None)
            if idle is None:
                return
            del self._next[idle]

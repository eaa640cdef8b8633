"""Which Kafka offsets are safe to commit: only up to the first record not yet settled in the database.

A record is in flight from the moment it is consumed until the database transaction holding its outcome has
committed (it may sit in the reorder buffer meanwhile). Per partition the committable position is the smallest
in-flight offset, or one past the highest consumed offset when nothing is in flight.
"""

from __future__ import annotations

from collections.abc import Iterable


class OffsetTracker:
    def __init__(self) -> None:
        self._in_flight: dict[int, set[int]] = {}
        self._next: dict[int, int] = {}
        self._committed: dict[int, int] = {}

    def consumed(self, partition: int, offset: int) -> None:
        self._in_flight.setdefault(partition, set()).add(offset)
        self._next[partition] = max(self._next.get(partition, 0), offset + 1)

    def settled(self, partition: int, offset: int) -> None:
        self._in_flight.get(partition, set()).discard(offset)

    def positions(self) -> dict[int, int]:
        """The committable position of every partition whose position moved since `mark_committed`."""
        moved: dict[int, int] = {}
        for partition, following in self._next.items():
            pending = self._in_flight.get(partition)
            position = min(pending) if pending else following
            if position > self._committed.get(partition, -1):
                moved[partition] = position
        return moved

    def mark_committed(self, positions: dict[int, int]) -> None:
        self._committed.update(positions)

    def forget(self, partitions: Iterable[int]) -> None:
        """Drop every record of `partitions` (revoked: their next owner resumes from the committed position)."""
        for partition in partitions:
            self._in_flight.pop(partition, None)
            self._next.pop(partition, None)
            self._committed.pop(partition, None)

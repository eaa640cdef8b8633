"""Where a group starts on a family's partitions: for each, the first record whose source position it has not
consumed. A partition interleaves many source partitions and a backfilled block is sorted by key, not by source
offset, so this is found by reading, never by a timestamp or an offset mapping."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_rekey.shared.migration.positions import Boundary, covers
from kafka_rekey.shared.sequencing import SourcePosition


@dataclass
class TargetScan:
    """One partition of a family topic, read in offset order (read_committed) against a group's boundary."""

    topic: str
    partition: int
    start: int | None = None
    """Offset of the first record the group has not consumed; None until one is read."""
    end: int = 0
    """Where the read ended: the start offset when every record read was consumed."""
    records: int = 0
    redelivered: int = 0
    """Records after the start whose source position the group consumed: it sees them again."""
    new_sources: int = 0
    """Records after the start from source partitions the group never read."""
    unpositioned: int = 0
    """Records without a source position (none in a family the ACL or the backfill wrote)."""

    def add(self, offset: int, position: SourcePosition | None, boundary: Boundary) -> None:
        self.records += 1
        self.end = max(self.end, offset + 1)
        if position is None:
            self.unpositioned += 1
            return
        consumed = covers(boundary, position)
        if self.start is None:
            if consumed:
                return
            self.start = offset
        if consumed:
            self.redelivered += 1
        elif (position.topic, position.partition) not in boundary:
            self.new_sources += 1

    @property
    def start_offset(self) -> int:
        return self.end if self.start is None else self.start


@dataclass(frozen=True)
class MovePlan:
    """The start offsets of a group on a family's partitions, and what it will read there again or anew."""

    start_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    scanned: int = 0
    redelivered: int = 0
    new_sources: int = 0
    unpositioned: int = 0


def plan_move(scans: Iterable[TargetScan]) -> MovePlan:
    scans = list(scans)
    return MovePlan(
        start_offsets={(scan.topic, scan.partition): scan.start_offset for scan in scans},
        scanned=sum(scan.records for scan in scans),
        redelivered=sum(scan.redelivered for scan in scans),
        new_sources=sum(scan.new_sources for scan in scans),
        unpositioned=sum(scan.unpositioned for scan in scans),
    )

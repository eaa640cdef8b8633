"""Reading a family's records for their source positions (their `src` header), read_committed, to each
partition's last stable offset."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kafka_rekey.services.kafka.reading import iter_from
from kafka_rekey.shared.migration import Boundary, TargetScan
from kafka_rekey.shared.sequencing import SourcePosition

Progress = Callable[[int], None]
Position = tuple[str, int, int, SourcePosition | None]
"""(topic, partition, offset, the record's source position or None)."""


def source_position(headers: Iterable[tuple[str, bytes | str | None]] | None) -> SourcePosition | None:
    for name, value in headers or ():
        if name == "src" and value:
            return SourcePosition.parse(value.decode() if isinstance(value, bytes) else value)
    return None


def positions(config: Mapping[str, Any], topics: Iterable[str], starts: Mapping[tuple[str, int], int] | None = None,
              ends: Mapping[tuple[str, int], int] | None = None,
              progress: Progress | None = None) -> Iterator[Position]:
    """The source position of every committed record of `topics` from `starts` (a partition's beginning if
    none) to the end, or up to `ends` where given."""
    starts, ends = starts or {}, ends or {}
    for topic in topics:
        first = {partition: offset for (name, partition), offset in starts.items() if name == topic}
        stops = {partition: offset for (name, partition), offset in ends.items() if name == topic}
        for message in iter_from(dict(config), topic, first, progress=progress, isolation="read_committed"):
            partition, offset = message.partition(), message.offset()
            if partition in stops and offset >= stops[partition]:
                continue
            yield topic, partition, offset, source_position(message.headers())


def scan_family(config: Mapping[str, Any], topics: list[str], partitions: Iterable[tuple[str, int]],
                boundary: Boundary, progress: Progress | None = None) -> list[TargetScan]:
    """Every partition of the family read whole against `boundary`."""
    scans = {(topic, partition): TargetScan(topic, partition) for topic, partition in partitions}
    for topic, partition, offset, position in positions(config, topics, progress=progress):
        scans[(topic, partition)].add(offset, position, boundary)
    return list(scans.values())

"""The pure core of `rekey check`: given every output record and the expected event ids, find violations.

Per output key (within a topic): the set of sequences must be exactly 1..n (nothing lost, no gap); in log order
the first occurrence of each sequence must be strictly increasing (order kept); every record must sit on the
Java-parity partition of its key. A repeated (key, sequence) is a duplicate: allowed at-least-once, never with
exactly-once, and only as an identical re-emission: the same (key, sequence) with another event is a
conflict, and one event under two sequences of its key is a renumbering. Expected event ids missing from the
output are lost; others are unexpected.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_rekey.shared.partitioning import partition_for


@dataclass(frozen=True, slots=True)
class OutputRecord:
    topic: str
    partition: int
    offset: int
    key: str
    sequence: int
    event_id: str


@dataclass
class CheckReport:
    records: int = 0
    keys: int = 0
    duplicates: int = 0
    conflicting: list[str] = field(default_factory=list)
    """(key, sequence) pairs emitted more than once with different events: a re-numbering, never allowed."""
    renumbered: list[str] = field(default_factory=list)
    """Events emitted under more than one sequence of their key (the counter moved on without the event)."""
    lost: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    wrong_partition: list[str] = field(default_factory=list)
    dead_letters_missing: list[str] = field(default_factory=list)

    def violations(self, exactly_once: bool) -> dict[str, int]:
        found = {
            "lost": len(self.lost),
            "conflicting": len(self.conflicting),
            "renumbered": len(self.renumbered),
            "unexpected": len(self.unexpected),
            "gaps": len(self.gaps),
            "out_of_order": len(self.out_of_order),
            "wrong_partition": len(self.wrong_partition),
            "dead_letters_missing": len(self.dead_letters_missing),
            "duplicates": self.duplicates if exactly_once else 0,
        }
        return {name: count for name, count in found.items() if count}

    def passed(self, exactly_once: bool) -> bool:
        return not self.violations(exactly_once)


def check_outputs(
    records: Iterable[OutputRecord],
    partitions: Mapping[str, int],
    expected_event_ids: set[str] | None = None,
    expected_dead_letters: set[str] | None = None,
    dead_letters: set[str] | None = None,
) -> CheckReport:
    """Check records of one family's output topics. Dead letters are compared as `topic/partition/offset`."""
    report = CheckReport()
    by_key: dict[tuple[str, str], list[OutputRecord]] = defaultdict(list)
    seen_events: set[str] = set()
    for record in records:
        report.records += 1
        by_key[(record.topic, record.key)].append(record)
        seen_events.add(record.event_id)
        if record.partition != partition_for(record.key, partitions[record.topic]):
            report.wrong_partition.append(f"{record.topic}/{record.key}@{record.partition}")
    report.keys = len(by_key)
    for (topic, key), rows in by_key.items():
        rows.sort(key=lambda r: r.offset)
        first_seen: list[int] = []
        events: dict[int, str] = {}
        for row in rows:
            if row.sequence in events:
                report.duplicates += 1
                if events[row.sequence] != row.event_id:
                    report.conflicting.append(f"{topic}/{key}#{row.sequence}")
                continue
            events[row.sequence] = row.event_id
            first_seen.append(row.sequence)
        sequences = set(events)
        numbers: dict[str, set[int]] = defaultdict(set)
        for sequence, event_id in events.items():
            numbers[event_id].add(sequence)
        report.renumbered += [f"{topic}/{key}:{event}" for event, seen in numbers.items() if len(seen) > 1]
        if sequences != set(range(1, len(sequences) + 1)):
            report.gaps.append(f"{topic}/{key}")
        if any(later <= earlier for earlier, later in itertools.pairwise(first_seen)):
            report.out_of_order.append(f"{topic}/{key}")
    if expected_event_ids is not None:
        report.lost = sorted(expected_event_ids - seen_events)
        report.unexpected = sorted(seen_events - expected_event_ids)
    if expected_dead_letters is not None:
        report.dead_letters_missing = sorted(expected_dead_letters - (dead_letters or set()))
    return report

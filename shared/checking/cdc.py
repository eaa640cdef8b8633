"""The pure core of the CDC check: the committed row changes of a captured table (a manifest written by whoever
made them, in commit order) against the domain events the ACL wrote for them.

`rekey check` compares event ids, which for CDC carry the change's LSN: nobody writing rows knows it. This check
matches by content instead. Per interaction (output key `org_id:interaction_id`) the events in sequence order
must be the row's changes in commit order, one event per change: the same Debezium op, the same row id, the
same column values (`columns`), the large text column in full where the change carried it or named under
`__unchanged_columns` where an update left it unchanged (TOAST). On top of what `check_outputs` finds (dense
sequences, order in the log, Java-parity partitions, duplicates), an event the manifest does not explain is
unexpected, a change without its event is lost, an event that differs from the change at its place is
mismatched, LSNs must rise with the sequence, no payload may carry Debezium's TOAST placeholder, and no record
of the source may be dead-lettered (a delete the ACL could not number under its interaction lands there).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_rekey.shared.checking.report import CheckReport, OutputRecord, check_outputs

PLACEHOLDER = "__debezium_unavailable_value"
UNCHANGED = "__unchanged_columns"
EVENT_TYPES = {"c": "created", "u": "updated", "d": "deleted", "r": "snapshot"}


def text_digest(text: str) -> str:
    """How a manifest names a large text value: its length and SHA-1, `<chars>:<sha1 hex>`."""
    return f"{len(text)}:{hashlib.sha1(text.encode()).hexdigest()}"


@dataclass(frozen=True)
class RowChange:
    """One committed change of a captured row, as the manifest records it."""

    commit: int
    """The transaction's place in commit order (1, 2, ...); the changes of one transaction share it."""
    op: str
    """Debezium's op: r (in the snapshot), c, u, d."""
    row_id: int
    org_id: str
    interaction_id: str
    columns: Mapping[str, Any] = field(default_factory=dict)
    """Plain values the event's payload must hold (c, u, r): e.g. status, an exact decimal as a string."""
    large: Mapping[str, str | None] = field(default_factory=dict)
    """Large text columns: `text_digest` of the value the change wrote, or None where an update left the stored
    (TOASTed) value unchanged, which the payload must then name under `__unchanged_columns`."""

    @property
    def key(self) -> str:
        return f"{self.org_id}:{self.interaction_id}"

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> RowChange:
        return cls(int(row["commit"]), str(row["op"]), int(row["id"]), str(row["org_id"]),
                   str(row["interaction_id"]), dict(row.get("columns") or {}), dict(row.get("large") or {}))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "change", "commit": self.commit, "op": self.op, "id": self.row_id, "org_id": self.org_id,
                "interaction_id": self.interaction_id, "columns": dict(self.columns), "large": dict(self.large)}


@dataclass(frozen=True)
class CdcEvent:
    """One domain event written for a change of the source (decoded from a family's output topic)."""

    topic: str
    partition: int
    offset: int
    key: str
    sequence: int
    event_id: str
    event_type: str
    change_op: str | None
    ordering_token: int
    payload: str
    interaction_type: str | None = None
    source_partition: int = -1
    source_offset: int = -1
    """Where in the source topic the change was read."""

    def output(self) -> OutputRecord:
        return OutputRecord(self.topic, self.partition, self.offset, self.key, self.sequence, self.event_id)


@dataclass
class CdcReport:
    changes: int = 0
    """Committed row changes in the manifest."""
    events: int = 0
    """Distinct (key, sequence) events of the source in the family."""
    keys: int = 0
    committed_by_op: Counter[str] = field(default_factory=Counter)
    events_by_op: Counter[str] = field(default_factory=Counter)
    unchanged_named: int = 0
    """Events naming a column under `__unchanged_columns` where the manifest says the update left it."""
    outputs: CheckReport = field(default_factory=CheckReport)
    """Dense sequences, log order, parity and duplicates, as `rekey check` judges them."""
    lost: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    lsn_out_of_order: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)
    dead_letters: Counter[str] = field(default_factory=Counter)
    """Dead letters of the source, by reason."""

    def violations(self) -> dict[str, int]:
        found = {
            "lost": len(self.lost),
            "unexpected": len(self.unexpected),
            "mismatched": len(self.mismatched),
            "gaps": len(self.outputs.gaps),
            "out_of_order": len(self.outputs.out_of_order),
            "lsn_out_of_order": len(self.lsn_out_of_order),
            "duplicates": self.outputs.duplicates,
            "conflicting": len(self.outputs.conflicting),
            "renumbered": len(self.outputs.renumbered),
            "wrong_partition": len(self.outputs.wrong_partition),
            "placeholders": len(self.placeholders),
            "dead_letters": sum(self.dead_letters.values()),
        }
        return {name: count for name, count in found.items() if count}

    def passed(self) -> bool:
        return not self.violations()


def read_manifest(lines: Iterable[str]) -> list[RowChange]:
    """The committed changes of a manifest (JSON lines; lines of other kinds are notes for people)."""
    changes = []
    for line in lines:
        if line.strip():
            row = json.loads(line)
            if row.get("kind") == "change":
                changes.append(RowChange.from_json(row))
    return changes


def check_cdc(changes: Sequence[RowChange], events: Iterable[CdcEvent], partitions: Mapping[str, int],
              dead_letters: Mapping[str, int] | None = None) -> CdcReport:
    """Check the events of one source in one family against its committed `changes` (in commit order).
    `dead_letters`: the source's dead letters by reason."""
    events = list(events)
    report = CdcReport(changes=len(changes), dead_letters=Counter(dead_letters or {}))
    report.outputs = check_outputs([event.output() for event in events], partitions)
    expected: dict[str, list[RowChange]] = defaultdict(list)
    for change in changes:
        expected[change.key].append(change)
        report.committed_by_op[change.op] += 1
    numbered: dict[str, dict[int, CdcEvent]] = defaultdict(dict)
    for event in events:
        if PLACEHOLDER in event.payload:
            report.placeholders.append(f"{event.key}#{event.sequence}")
        numbered[event.key].setdefault(event.sequence, event)
    report.keys = len(numbered)
    for key in [*expected, *(key for key in numbered if key not in expected)]:
        wanted, got = expected.get(key, []), [numbered[key][s] for s in sorted(numbered.get(key, {}))]
        report.events += len(got)
        report.events_by_op.update(event.change_op or "?" for event in got)
        for place in range(max(len(wanted), len(got))):
            if place >= len(got):
                report.lost.append(f"{key}: {wanted[place].op} of row {wanted[place].row_id} "
                                   f"(change {place + 1} of {len(wanted)})")
            elif place >= len(wanted):
                report.unexpected.append(f"{key}#{got[place].sequence} {got[place].event_type}")
            else:
                problem = _difference(wanted[place], got[place])
                if problem is None:
                    report.unchanged_named += len(_unchanged(wanted[place]))
                else:
                    report.mismatched.append(f"{key}#{got[place].sequence}: {problem}")
        tokens = [event.ordering_token for event in got]
        if any(later <= earlier for earlier, later in itertools.pairwise(tokens)):
            report.lsn_out_of_order.append(key)
    return report


def _unchanged(change: RowChange) -> list[str]:
    return sorted(column for column, digest in change.large.items() if digest is None)


def _difference(change: RowChange, event: CdcEvent) -> str | None:
    """What makes `event` not the event of `change` (None: it is)."""
    if event.change_op != change.op or event.event_type != EVENT_TYPES.get(change.op):
        return f"{event.event_type} ({event.change_op}) where the change is {change.op}"
    try:
        payload = json.loads(event.payload)
    except ValueError:
        return "payload is not JSON"
    if not isinstance(payload, dict):
        return "payload is not an object"
    if payload.get("id") != change.row_id:
        return f"row id {payload.get('id')!r}, the change is of row {change.row_id}"
    if change.op == "d":
        return None
    for column, value in change.columns.items():
        if payload.get(column) != value:
            return f"{column} {payload.get(column)!r}, the change wrote {value!r}"
    unchanged = _unchanged(change)
    if sorted(payload.get(UNCHANGED) or []) != unchanged:
        return f"{UNCHANGED} {payload.get(UNCHANGED)!r}, the change left {unchanged} unchanged"
    for column, digest in change.large.items():
        if digest is None:
            if column in payload:
                return f"{column} carried, the change left it unchanged"
        elif not isinstance(payload.get(column), str) or text_digest(payload[column]) != digest:
            return f"{column} is not the text the change wrote"
    return None

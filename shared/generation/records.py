"""One planned source record and its manifest line (the ground truth tests and benchmarks reconcile against)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from json.encoder import encode_basestring_ascii


class RecordKind(StrEnum):
    EVENT = "event"
    """A first delivery of a valid event: translates to a domain event."""
    DUPLICATE = "duplicate"
    """The same key and value re-sent (a redelivery): translates to the same dedupe id as `duplicate_of`."""
    MALFORMED = "malformed"
    """A poison pill: `malformed_reason` is the PoisonReason `translate` gives it."""
    TOMBSTONE = "tombstone"
    """The null value Debezium writes after a delete: translates to a tombstone skip."""


@dataclass(slots=True)
class PlannedRecord:
    kind: RecordKind
    key: bytes | None
    value: bytes | None
    event_id: str | None
    org_id: str | None
    interaction_id: str | None
    event_type: str | None
    event_time_ms: int | None
    malformed_reason: str | None = None
    duplicate_of: int | None = None
    """Index of the record this one repeats."""
    late: bool = False
    """Held back: sent after records generated later than it (possibly after its interaction's successors)."""
    index: int = -1
    """Position in send order, 0-based; set when the record is sent."""

    def manifest_line(self, partition: int, offset: int) -> str:
        """The JSON line describing this record and where it landed (hand-assembled: this runs per record)."""
        key = None if self.key is None else self.key.decode("utf-8", "replace")
        return (
            f'{{"index":{self.index},"kind":"{self.kind.value}","event_id":{_string(self.event_id)},'
            f'"org_id":{_string(self.org_id)},"interaction_id":{_string(self.interaction_id)},'
            f'"event_type":{_string(self.event_type)},"event_time_ms":{_number(self.event_time_ms)},'
            f'"malformed":{_flag(self.kind is RecordKind.MALFORMED)},'
            f'"malformed_reason":{_string(self.malformed_reason)},"duplicate_of":{_number(self.duplicate_of)},'
            f'"late":{_flag(self.late)},"key":{_string(key)},"partition":{partition},"offset":{offset}}}\n'
        )


def _string(value: str | None) -> str:
    return "null" if value is None else encode_basestring_ascii(value)


def _number(value: int | None) -> str:
    return "null" if value is None else str(value)


def _flag(value: bool) -> str:
    return "true" if value else "false"

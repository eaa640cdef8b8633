"""The domain event as the sink sees it, built from a decoded `InteractionEvent` record and its Kafka key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

Interaction = tuple[str, str]
"""(org_id, interaction_id): the identity of one row of the sink table."""

Version = tuple[int, int]
"""(event_time in epoch milliseconds, sequence): newer versions compare greater."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class InvalidEvent(ValueError):
    """A decoded record is not a usable `InteractionEvent`; the message names the field."""


@dataclass(frozen=True, slots=True)
class SourcePosition:
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class SinkEvent:
    """One domain event. `output_key` is the domain topic's record key: `sequence` is dense per output key."""

    output_key: str
    org_id: str
    interaction_id: str
    event_id: str
    event_type: str
    interaction_type: str | None
    event_time: int
    sequence: int
    source: SourcePosition
    ordering_token: int
    change_op: str | None
    payload: str

    @property
    def interaction(self) -> Interaction:
        return (self.org_id, self.interaction_id)

    @property
    def version(self) -> Version:
        return (self.event_time, self.sequence)

    @property
    def slot(self) -> tuple[str, int]:
        """(output_key, sequence): where this event sits in its key's dense sequence."""
        return (self.output_key, self.sequence)


def _text(record: Mapping[str, object], name: str, optional: bool = False) -> str | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not optional and value == ""):
        raise InvalidEvent(f"field {name!r} must be a non-empty string, got {value!r}")
    return value


def _integer(record: Mapping[str, object], name: str) -> int:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidEvent(f"field {name!r} must be an integer, got {value!r}")
    return value


def _epoch_millis(value: object) -> int:
    """Avro `timestamp-millis` arrives as an int, or as an aware datetime when logical types are decoded."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidEvent(f"field 'event_time' is a naive datetime {value!r}; expected UTC")
        return (value - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidEvent(f"field 'event_time' must be epoch milliseconds or a datetime, got {value!r}")


def event_from_record(record: Mapping[str, object], output_key: str) -> SinkEvent:
    """Build a `SinkEvent` from a decoded `InteractionEvent` record; raise `InvalidEvent` naming the bad field."""
    if not output_key:
        raise InvalidEvent("the record has no key: a domain record's key is its output key")
    source = record.get("source")
    if not isinstance(source, Mapping):
        raise InvalidEvent(f"field 'source' must be a record, got {source!r}")
    sequence = _integer(record, "sequence")
    if sequence < 1:
        raise InvalidEvent(f"field 'sequence' must be 1 or more, got {sequence}")
    return SinkEvent(
        output_key=output_key,
        org_id=str(_text(record, "org_id")),
        interaction_id=str(_text(record, "interaction_id")),
        event_id=str(_text(record, "event_id")),
        event_type=str(_text(record, "event_type")),
        interaction_type=_text(record, "interaction_type", optional=True),
        event_time=_epoch_millis(record.get("event_time")),
        sequence=sequence,
        source=SourcePosition(
            topic=str(_text(source, "topic")),
            partition=_integer(source, "partition"),
            offset=_integer(source, "offset"),
        ),
        ordering_token=_integer(record, "ordering_token"),
        change_op=_text(record, "change_op", optional=True),
        payload=str(_text(record, "payload", optional=True) or ""),
    )

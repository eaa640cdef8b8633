"""What `translate` returns: a domain event draft, a counted skip, or a poison pill for the dead-letter topic.

`to_avro_record(draft, sequence)` gives the `InteractionEvent` record (shared/schemas/interaction_event.avsc)
as plain JSON-compatible values (event_time in epoch milliseconds), identically for live and backfill.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

from kafka_rekey.shared.sequencing import SourcePosition


class SkipReason(StrEnum):
    TOMBSTONE = "tombstone"
    """A null value: the compaction tombstone Debezium writes after a delete (or one on an event stream)."""
    TRUNCATE = "truncate"
    """A Debezium truncate (op `t`): it names no interaction, so there is no domain event to emit."""
    MESSAGE = "logical_message"
    """A Debezium logical decoding message (op `m`, `pg_logical_emit_message`): it names no row."""
    TRANSACTION = "transaction_marker"
    """A BEGIN/END record of Debezium's transaction metadata topic."""
    NOT_AN_INTERACTION = "not_an_interaction"
    """An event of the source's stream that is not about an interaction (an audit, a rule match, presence)."""
    HEARTBEAT = "heartbeat"
    """A keep-alive of the delivery channel (the Notification API's `channel.metadata`, Debezium's heartbeats)."""


class PoisonReason(StrEnum):
    UNDECODABLE = "undecodable"
    SCHEMA_INVALID = "schema_invalid"
    MISSING_ORG_ID = "missing_org_id"
    MISSING_INTERACTION_ID = "missing_interaction_id"
    MISSING_EVENT_ID = "missing_event_id"
    BAD_TIMESTAMP = "bad_timestamp"
    UNKNOWN_ROW = "unknown_row"
    """A CDC delete whose before image and key lack the ids, of a row no earlier change was seen of."""
    UNROUTABLE = "unroutable"
    """Translated, but its ids cannot form an output key (`shared.routing.route` refused them)."""


class Skip(msgspec.Struct, frozen=True, gc=False):
    reason: SkipReason
    message: str


class PoisonPill(msgspec.Struct, frozen=True, gc=False):
    """A record that can never translate; `field` names the offending field when there is one."""

    reason_code: PoisonReason
    message: str
    field: str | None = None


class DomainEventDraft(msgspec.Struct, frozen=True, gc=False):
    """An `InteractionEvent` without its `sequence` (stamped per output key later), plus its dedupe id."""

    org_id: str
    interaction_id: str
    event_id: str
    event_type: str
    interaction_type: str | None
    event_time_ms: int
    source: SourcePosition
    ordering_token: int
    change_op: str | None
    payload: str
    dedupe_id: str


Outcome = DomainEventDraft | Skip | PoisonPill


def to_avro_record(draft: DomainEventDraft, sequence: int) -> dict[str, Any]:
    """The `InteractionEvent` record for `draft` with `sequence` stamped."""
    return {
        "org_id": draft.org_id,
        "interaction_id": draft.interaction_id,
        "event_id": draft.event_id,
        "event_type": draft.event_type,
        "interaction_type": draft.interaction_type,
        "event_time": draft.event_time_ms,
        "sequence": sequence,
        "source": {
            "topic": draft.source.topic,
            "partition": draft.source.partition,
            "offset": draft.source.offset,
        },
        "ordering_token": draft.ordering_token,
        "change_op": draft.change_op,
        "payload": draft.payload,
    }

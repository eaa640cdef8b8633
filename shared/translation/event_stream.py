"""Contact-centre (CCaaS) event-stream JSON -> domain event draft.

A record looks like (unknown fields are tolerated and dropped; `data` becomes the payload):

    {"orgId": "...", "interactionId": "...", "eventId": "...", "interactionType": "call",
     "eventType": "start|answer|transfer|end|...", "timestamp": "2023-10-27T14:30:00Z",
     "data": {"callerNumber": "...", "agentId": "..."}}

The key is ignored (upstream keys these arbitrarily or not at all). The dedupe id is the upstream `eventId`
(a redelivered event repeats it); the ordering token is the event time in epoch milliseconds.
"""

from __future__ import annotations

from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey.shared.translation.fields import (
    canonical_json,
    fail,
    identifier,
    iso_millis,
    json_object,
    optional_text,
)
from kafka_rekey.shared.translation.outcomes import DomainEventDraft, Outcome, PoisonReason, Skip, SkipReason
from kafka_rekey.shared.translation.source import SourceRecord


def translate_event(record: SourceRecord) -> Outcome:
    if record.value is None:
        return Skip(SkipReason.TOMBSTONE, "null value on an event stream")
    event = json_object(record.value, "event value")
    org_id = identifier(event, "orgId", PoisonReason.MISSING_ORG_ID)
    interaction_id = identifier(event, "interactionId", PoisonReason.MISSING_INTERACTION_ID)
    event_id = identifier(event, "eventId", PoisonReason.MISSING_EVENT_ID)
    event_type = identifier(event, "eventType", PoisonReason.SCHEMA_INVALID)
    interaction_type = optional_text(event, "interactionType")
    event_time_ms = iso_millis(event.get("timestamp"), "timestamp")
    data = event.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        fail(PoisonReason.SCHEMA_INVALID, f"data is a {type(data).__name__}, expected an object", "data")
    return DomainEventDraft(
        org_id=org_id,
        interaction_id=interaction_id,
        event_id=event_id,
        event_type=event_type,
        interaction_type=interaction_type,
        event_time_ms=event_time_ms,
        source=SourcePosition(record.topic, record.partition, record.offset),
        ordering_token=event_time_ms,
        change_op=None,
        payload=canonical_json(data, "data"),
        dedupe_id=event_id,
    )

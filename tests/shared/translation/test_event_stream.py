"""Contact-centre event-stream JSON: field mapping, tolerated extras, and every poison-pill reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey.shared.translation import (
    DomainEventDraft,
    PoisonPill,
    PoisonReason,
    Skip,
    SkipReason,
    SourceFormat,
    SourceRecord,
    translate,
)

EVENT: dict[str, Any] = {
    "orgId": "org-7",
    "interactionId": "int-42",
    "eventId": "e-1",
    "interactionType": "call",
    "eventType": "answer",
    "timestamp": "2023-10-27T14:30:00Z",
    "data": {"callerNumber": "+4930123", "agentId": "a-9"},
}


def record(value: bytes | None, key: bytes | None = None) -> SourceRecord:
    return SourceRecord("cc-events", 4, 1001, key, value, {}, 1698417000123)


def run(event: dict[str, Any]) -> DomainEventDraft | Skip | PoisonPill:
    return translate(record(json.dumps(event).encode()), SourceFormat.CCAAS_JSON)


def test_a_well_formed_event_becomes_a_draft() -> None:
    assert run(EVENT) == DomainEventDraft(
        org_id="org-7",
        interaction_id="int-42",
        event_id="e-1",
        event_type="answer",
        interaction_type="call",
        event_time_ms=1698417000000,
        source=SourcePosition("cc-events", 4, 1001),
        ordering_token=1698417000000,
        change_op=None,
        payload='{"agentId":"a-9","callerNumber":"+4930123"}',
        dedupe_id="e-1",
    )


def test_unknown_fields_and_the_key_do_not_matter() -> None:
    plain = translate(record(json.dumps(EVENT).encode()), "ccaas-json")
    noisy = translate(record(json.dumps(dict(EVENT, region="eu", version=3)).encode(), key=b"whatever"), "ccaas-json")
    assert plain == noisy


def test_key_order_and_whitespace_do_not_change_the_draft() -> None:
    reordered = json.dumps(dict(reversed(list(EVENT.items()))), indent=4).encode()
    assert translate(record(reordered), "ccaas-json") == run(EVENT)


@pytest.mark.parametrize(("timestamp", "millis"), [
    ("2023-10-27T14:30:00.123456Z", 1698417000123),
    ("2023-10-27T16:30:00+02:00", 1698417000000),
    ("1969-12-31T23:59:59.999Z", -1),
])
def test_timestamps_with_offsets_become_epoch_millis(timestamp: str, millis: int) -> None:
    draft = run(dict(EVENT, timestamp=timestamp))
    assert isinstance(draft, DomainEventDraft)
    assert draft.event_time_ms == draft.ordering_token == millis


def test_optional_interaction_type_and_data() -> None:
    draft = run({k: v for k, v in EVENT.items() if k not in ("interactionType", "data")})
    assert isinstance(draft, DomainEventDraft)
    assert draft.interaction_type is None and draft.payload == "{}"


def test_a_null_value_is_a_counted_tombstone_skip() -> None:
    outcome = translate(record(None), "ccaas-json")
    assert isinstance(outcome, Skip) and outcome.reason is SkipReason.TOMBSTONE
    assert f"{outcome.reason}" == "tombstone"  # a metrics label as it is


@pytest.mark.parametrize(("value", "reason", "field"), [
    (b"\xff\xfe\x00garbage", PoisonReason.UNDECODABLE, None),
    (b'{"orgId": "org-7", ', PoisonReason.UNDECODABLE, None),
    (b'{"orgId": NaN}', PoisonReason.UNDECODABLE, None),
    (b"[1, 2, 3]", PoisonReason.SCHEMA_INVALID, None),
    (b"", PoisonReason.UNDECODABLE, None),
])
def test_undecodable_values(value: bytes, reason: PoisonReason, field: str | None) -> None:
    outcome = translate(record(value), "ccaas-json")
    assert isinstance(outcome, PoisonPill)
    assert (outcome.reason_code, outcome.field) == (reason, field)


@pytest.mark.parametrize(("change", "reason", "field"), [
    ({"orgId": None}, PoisonReason.MISSING_ORG_ID, "orgId"),
    ({"orgId": "  "}, PoisonReason.MISSING_ORG_ID, "orgId"),
    ({"orgId": 7}, PoisonReason.SCHEMA_INVALID, "orgId"),
    ({"interactionId": ""}, PoisonReason.MISSING_INTERACTION_ID, "interactionId"),
    ({"eventId": None}, PoisonReason.MISSING_EVENT_ID, "eventId"),
    ({"eventType": None}, PoisonReason.SCHEMA_INVALID, "eventType"),
    ({"interactionType": ["call"]}, PoisonReason.SCHEMA_INVALID, "interactionType"),
    ({"data": "callerNumber=1"}, PoisonReason.SCHEMA_INVALID, "data"),
    ({"timestamp": None}, PoisonReason.BAD_TIMESTAMP, "timestamp"),
    ({"timestamp": 1698417000000}, PoisonReason.BAD_TIMESTAMP, "timestamp"),
    ({"timestamp": "yesterday"}, PoisonReason.BAD_TIMESTAMP, "timestamp"),
    ({"timestamp": "2023-13-45T99:00:00Z"}, PoisonReason.BAD_TIMESTAMP, "timestamp"),
    ({"timestamp": "2023-10-27T14:30:00"}, PoisonReason.BAD_TIMESTAMP, "timestamp"),
    ({"orgId": "org-\ud800"}, PoisonReason.SCHEMA_INVALID, "orgId"),
])
def test_invalid_fields_name_reason_and_field(change: dict[str, Any], reason: PoisonReason, field: str) -> None:
    outcome = run({k: v for k, v in {**EVENT, **change}.items() if v is not None})
    if any(v is None for v in change.values()):
        assert outcome == run({**EVENT, **change})  # absent and null mean the same
    assert isinstance(outcome, PoisonPill), outcome
    assert (outcome.reason_code, outcome.field) == (reason, field)
    assert field in outcome.message


def test_an_unknown_source_format_is_a_configuration_error_naming_the_topic() -> None:
    with pytest.raises(ValueError, match="topic 'cc-events': unknown source format 'csv'"):
        translate(record(b"{}"), "csv")

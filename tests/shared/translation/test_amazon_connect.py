"""Amazon Connect contact events through EventBridge: the vendor's published example and the variations the
preset must take (current field spelling, the event's own timestamps, transfers, other event types)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kafka_rekey.shared.translation import (
    DomainEventDraft,
    PoisonPill,
    PoisonReason,
    Skip,
    SkipReason,
    SourceRecord,
    translate,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sources" / "amazon-connect"
PUBLISHED = json.loads((FIXTURES / "connected-to-agent.json").read_text())
INSTANCE = "12345678-1234-1234-1234-123456789012"


def run(value: dict[str, Any] | None) -> DomainEventDraft | Skip | PoisonPill:
    data = None if value is None else json.dumps(value).encode()
    return translate(SourceRecord("connect.contact-events", 0, 3, None, data), "amazon-connect")


def _millis(iso: str) -> int:
    return int(datetime.fromisoformat(iso).astimezone(UTC).timestamp() * 1000)


def test_the_published_example() -> None:
    draft = run(PUBLISHED)
    assert isinstance(draft, DomainEventDraft), draft
    assert (draft.org_id, draft.interaction_id, draft.event_id, draft.event_type, draft.interaction_type) == (
        INSTANCE, "11111111-2222-3333-4444-555555555555", "abcabcab-abca-abca-abca-abcabcabcabc",
        "CONNECTED_TO_AGENT", "voice")
    assert draft.event_time_ms == draft.ordering_token == _millis("2021-05-01T18:43:48+00:00")
    assert draft.dedupe_id == draft.event_id
    assert json.loads(draft.payload) == PUBLISHED["detail"]


def test_current_spelling_and_the_events_own_timestamp() -> None:
    detail = {key: value for key, value in PUBLISHED["detail"].items() if key != "instanceARN"}
    detail |= {"instanceArn": PUBLISHED["detail"]["instanceARN"],
               "agentInfo": {"agentArn": "arn", "connectedToAgentTimestamp": "2021-05-01T18:43:47.125Z"}}
    draft = run({**PUBLISHED, "detail": detail})
    assert isinstance(draft, DomainEventDraft) and draft.org_id == INSTANCE
    assert draft.event_time_ms == _millis("2021-05-01T18:43:47.125+00:00")


def test_without_an_initial_contact_the_contact_is_the_interaction() -> None:
    detail = {key: value for key, value in PUBLISHED["detail"].items() if key != "initialContactId"}
    draft = run({**PUBLISHED, "detail": detail})
    assert isinstance(draft, DomainEventDraft) and draft.interaction_id == "11111111-1111-1111-1111-111111111111"


def test_other_eventbridge_events_are_counted_skips() -> None:
    outcome = run({**PUBLISHED, "detail-type": "Contact Lens Post Call Rules Matched"})
    assert isinstance(outcome, Skip) and outcome.reason == SkipReason.NOT_AN_INTERACTION


@pytest.mark.parametrize(("change", "reason", "field"), [
    ({"instanceARN": None}, PoisonReason.MISSING_ORG_ID, "detail.instanceARN"),
    ({"instanceARN": "arn:aws:connect:us-west-2:1:queue/q"}, PoisonReason.MISSING_ORG_ID, "detail.instanceARN"),
    ({"initialContactId": None, "contactId": ""}, PoisonReason.MISSING_INTERACTION_ID, "detail.contactId"),
    ({"eventType": None}, PoisonReason.SCHEMA_INVALID, "detail.eventType"),
    ({"disconnectTimestamp": "yesterday"}, PoisonReason.BAD_TIMESTAMP, "detail.disconnectTimestamp"),
])
def test_broken_events_are_poison_pills_naming_the_field(change: dict[str, Any], reason: PoisonReason,
                                                         field: str) -> None:
    outcome = run({**PUBLISHED, "detail": {**PUBLISHED["detail"], **change}})
    assert isinstance(outcome, PoisonPill), outcome
    assert (outcome.reason_code, outcome.field) == (reason, field)


def test_an_event_without_its_id_cannot_be_deduplicated() -> None:
    outcome = run({key: value for key, value in PUBLISHED.items() if key != "id"})
    assert isinstance(outcome, PoisonPill) and (outcome.reason_code, outcome.field) == (
        PoisonReason.MISSING_EVENT_ID, "id")

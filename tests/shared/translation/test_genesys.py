"""Genesys Cloud presets against Genesys' own published examples (tests/fixtures/sources/genesys-*/README.md names
each file's origin): through Amazon EventBridge, and Notification API messages with the org from the declaration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_rekey.shared.catalog import parse_catalog
from kafka_rekey.shared.catalog.errors import CatalogError
from kafka_rekey.shared.translation import (
    DomainEventDraft,
    Outcome,
    PoisonPill,
    PoisonReason,
    Skip,
    SkipReason,
    SourceRecord,
    Translation,
    translate,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sources"
ORG = "32aa07aa-db1b-4987-abd0-9483601ec29d"
CONVERSATION = "2f7bf00a-0fc2-4d6a-9b56-92238191433e"


def _fixture(preset: str, name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / preset / f"{name}.json").read_text())  # type: ignore[no-any-return]


def run(value: dict[str, Any] | None, translation: Translation = "genesys-eventbridge",
        timestamp_ms: int | None = None) -> Outcome:
    data = None if value is None else json.dumps(value).encode()
    return translate(SourceRecord("genesys.events", 2, 41, None, data, timestamp_ms=timestamp_ms), translation)


@pytest.mark.parametrize(("name", "event_id", "event_type", "event_time_ms"), [
    ("customer-start", "adbcfa5b-0116-4baa-b66b-a3f5902e95bf", "v2.detail.events.conversation.{id}.customer.start",
     1649237444949),
    ("customer-end", "58fb5dac-f077-4eec-a25f-c638dbdd4368", "v2.detail.events.conversation.{id}.customer.end",
     1649237504949),
    ("customer-end-no-external-contact", "58fb5dac-f077-4eec-a25f-c638dbdd4368",
     "v2.detail.events.conversation.{id}.customer.end", 1649237504949),
])
def test_eventbridge_conversation_events(name: str, event_id: str, event_type: str, event_time_ms: int) -> None:
    published = _fixture("genesys-eventbridge", name)
    draft = run(published)
    assert isinstance(draft, DomainEventDraft), draft
    assert (draft.org_id, draft.interaction_id, draft.event_id, draft.event_type, draft.interaction_type) == (
        ORG, CONVERSATION, event_id, event_type, "chat")
    assert draft.event_time_ms == draft.ordering_token == event_time_ms
    assert draft.dedupe_id == event_id
    assert json.loads(draft.payload) == published["detail"]["eventBody"]


def test_the_event_type_is_the_concrete_topic_not_the_subscribed_pattern() -> None:
    """Genesys' own negative test (a `detail-type` of no known topic) carries a concrete customer.start topic."""
    draft = run(_fixture("genesys-eventbridge", "unknown-detail-type"))
    assert isinstance(draft, DomainEventDraft)
    assert draft.event_type == "v2.detail.events.conversation.{id}.customer.start"


def test_a_production_org_source_and_an_iso_event_time() -> None:
    published = _fixture("genesys-eventbridge", "customer-start")
    body = {**published["detail"]["eventBody"], "eventTime": "2022-04-06T09:30:44.949Z"}
    draft = run({**published, "source": f"aws.partner/genesys.com/cloud/{ORG}/prod-bus",
                 "detail": {**published["detail"], "eventBody": body}})
    assert isinstance(draft, DomainEventDraft) and (draft.org_id, draft.event_time_ms) == (ORG, 1649237444949)


def test_without_event_time_the_detail_timestamp_then_the_envelope_time() -> None:
    published = _fixture("genesys-eventbridge", "customer-start")
    body = {k: v for k, v in published["detail"]["eventBody"].items() if k != "eventTime"}
    detail = {**published["detail"], "eventBody": body}
    first = run({**published, "detail": detail})
    second = run({**published, "detail": {k: v for k, v in detail.items() if k != "timestamp"}})
    assert isinstance(first, DomainEventDraft) and first.event_time_ms == 1649237445013
    assert isinstance(second, DomainEventDraft) and second.event_time_ms == 1649237445000


def test_the_conversation_is_read_from_the_topic_when_the_body_lacks_it() -> None:
    published = _fixture("genesys-eventbridge", "customer-start")
    body = {k: v for k, v in published["detail"]["eventBody"].items() if k != "conversationId"}
    draft = run({**published, "detail": {**published["detail"], "eventBody": body}})
    assert isinstance(draft, DomainEventDraft) and draft.interaction_id == CONVERSATION


@pytest.mark.parametrize("name", ["audit-oauth-client-delete", "audit-user-presence"])
def test_audits_and_presence_are_counted_skips(name: str) -> None:
    outcome = run(_fixture("genesys-eventbridge", name))
    assert isinstance(outcome, Skip) and outcome.reason == SkipReason.NOT_AN_INTERACTION
    assert "v2.audits.entitytype." in outcome.message


@pytest.mark.parametrize(("change", "reason", "field"), [
    ({"source": "aws.partner/genesys.com/elsewhere"}, PoisonReason.MISSING_ORG_ID, "source"),
    ({"source": None}, PoisonReason.MISSING_ORG_ID, "source"),
    ({"id": ""}, PoisonReason.MISSING_EVENT_ID, "id"),
    ({"time": "soon", "detail": {"topicName": f"v2.detail.events.conversation.{CONVERSATION}.acw",
                                 "eventBody": {"conversationId": CONVERSATION}}}, PoisonReason.BAD_TIMESTAMP, "time"),
])
def test_broken_envelopes_are_poison_pills_naming_the_field(change: dict[str, Any], reason: PoisonReason,
                                                            field: str) -> None:
    outcome = run({**_fixture("genesys-eventbridge", "customer-start"), **change})
    assert isinstance(outcome, PoisonPill), outcome
    assert (outcome.reason_code, outcome.field) == (reason, field)


DEMO_CATALOG = Path(__file__).resolve().parents[3] / "catalog" / "topics.yaml"


def _catalog_with_notifications(mapping: dict[str, Any] | None) -> str:
    """The demo catalog plus a Notification API source of one org, as a user declares it."""
    data = yaml.safe_load(DEMO_CATALOG.read_text())
    source = {**data["sources"][0], "name": "genesys.notifications", "format": "genesys-notifications",
              "managed": False}
    if mapping is not None:
        source["mapping"] = mapping
    data["sources"].append(source)
    return yaml.safe_dump(data)


def _notifications() -> Translation:
    catalog = parse_catalog(_catalog_with_notifications({"org_id": {"constant": ORG}}), "notifications.yaml")
    return next(s for s in catalog.sources if s.name == "genesys.notifications").translation


def test_notifications_take_the_org_from_the_declaration() -> None:
    message = _fixture("genesys-notifications", "derived-customer-end")
    draft = run(message, _notifications(), timestamp_ms=1)
    assert isinstance(draft, DomainEventDraft), draft
    assert (draft.org_id, draft.interaction_id, draft.event_id, draft.event_type, draft.event_time_ms) == (
        ORG, CONVERSATION, "7272d362-23b2-4c14-9d40-dc7b7683153a",
        "v2.detail.events.conversation.{id}.customer.end", 1649237504949)


def test_a_notification_without_event_time_takes_the_records_timestamp() -> None:
    message = _fixture("genesys-notifications", "derived-customer-end")
    body = {k: v for k, v in message["eventBody"].items() if k != "eventTime"}
    draft = run({**message, "eventBody": body}, _notifications(), timestamp_ms=1649237504000)
    assert isinstance(draft, DomainEventDraft) and draft.event_time_ms == 1649237504000


@pytest.mark.parametrize(("name", "reason"), [("heartbeat", SkipReason.HEARTBEAT),
                                              ("user-presence", SkipReason.NOT_AN_INTERACTION)])
def test_heartbeats_and_presence_are_counted_skips(name: str, reason: SkipReason) -> None:
    outcome = run(_fixture("genesys-notifications", name), _notifications())
    assert isinstance(outcome, Skip) and outcome.reason == reason


def test_a_notifications_source_without_an_org_is_refused_at_start_up() -> None:
    with pytest.raises(CatalogError, match=r"notifications.yaml: source 'genesys.notifications'.*no source for "
                                           r"org_id.*declare it in mapping"):
        parse_catalog(_catalog_with_notifications(None), "notifications.yaml")


def test_the_preset_alone_cannot_translate_without_a_declaration() -> None:
    with pytest.raises(ValueError, match="genesys-notifications: no source for org_id"):
        run(_fixture("genesys-notifications", "heartbeat"), "genesys-notifications")

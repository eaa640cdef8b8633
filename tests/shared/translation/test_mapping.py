"""A declared mapping: each kind of field source, fallbacks in order, cutting values, and the declaration checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from kafka_rekey.shared.translation import (
    DomainEventDraft,
    Outcome,
    PoisonPill,
    PoisonReason,
    Skip,
    SkipReason,
    SourceRecord,
)
from kafka_rekey.shared.translation.mapping import MappingOverrides, SourceMapping
from kafka_rekey.shared.translation.translate import translate

MAPPING = MappingOverrides.model_validate({
    "org_id": [{"header": "tenant"}, {"path": "account", "split": "/", "segment": 1},
               {"constant": "org-default"}],
    "interaction_id": [{"path": "call.id"}, {"key": True}],
    "event_id": {"path": "meta.0.id"},
    "event_type": {"path": "kind", "lowercase": True},
    "event_time": [{"path": "at", "encoding": "epoch_us"}, {"path": "time", "encoding": "iso8601"},
                   {"record_timestamp": True}],
    "interaction_type": {"path": "channel", "pattern": r"^(\w+)-"},
    "payload": "call",
    "skip": [{"path": "kind", "equals": ["PING"], "reason": "heartbeat"}],
    "only": [{"path": "kind", "prefixes": ["CALL_"]}],
}).over()
EVENT = {"account": "acct/org-7/eu", "call": {"id": "c-1", "agent": "a"}, "meta": [{"id": "e-1"}],
         "kind": "CALL_START", "at": 1_700_000_000_123_456, "channel": "voice-pstn"}


def run(value: dict[str, Any] | None, key: bytes | None = None, headers: dict[str, bytes] | None = None,
        mapping: SourceMapping = MAPPING) -> Outcome:
    data = None if value is None else json.dumps(value).encode()
    return translate(SourceRecord("src", 1, 9, key, data, headers or {}, timestamp_ms=1_600_000_000_000), mapping)


def test_every_field_from_its_first_source() -> None:
    draft = run(EVENT, headers={"tenant": b"org-hdr"})
    assert isinstance(draft, DomainEventDraft), draft
    assert (draft.org_id, draft.interaction_id, draft.event_id, draft.event_type, draft.interaction_type,
            draft.event_time_ms) == ("org-hdr", "c-1", "e-1", "call_start", "voice", 1_700_000_000_123)
    assert json.loads(draft.payload) == EVENT["call"] and draft.dedupe_id == "e-1"


def test_fallbacks_in_order() -> None:
    value = {**EVENT, "call": {"agent": "a"}, "at": None, "time": "2023-11-14T22:13:20.5+00:00"}
    draft = run(value, key=b"c-from-key")
    assert isinstance(draft, DomainEventDraft), draft
    assert (draft.org_id, draft.interaction_id, draft.event_time_ms) == ("org-7", "c-from-key", 1_700_000_000_500)
    bare = run({**value, "account": "no-separator", "time": None}, key=b"k")
    assert isinstance(bare, DomainEventDraft) and (bare.org_id, bare.event_time_ms) == (
        "org-default", 1_600_000_000_000)


def test_skips_and_conditions() -> None:
    assert run({**EVENT, "kind": "PING"}) == Skip(SkipReason.HEARTBEAT, "kind is 'PING'")
    outcome = run({**EVENT, "kind": "AGENT_LOGIN"})
    assert isinstance(outcome, Skip) and outcome.reason == SkipReason.NOT_AN_INTERACTION
    assert run(None) == Skip(SkipReason.TOMBSTONE, "null value on an event stream")


@pytest.mark.parametrize(("change", "key", "reason", "field"), [
    ({"call": {}}, None, PoisonReason.MISSING_INTERACTION_ID, "record key"),
    ({"meta": []}, b"k", PoisonReason.MISSING_EVENT_ID, "meta.0.id"),
    ({"kind": "CALL_", "at": "late"}, None, PoisonReason.BAD_TIMESTAMP, "at"),
    ({"account": 7, "call": {"id": "c"}}, None, PoisonReason.SCHEMA_INVALID, "account"),
])
def test_poison_pills_name_the_field(change: dict[str, Any], key: bytes | None, reason: PoisonReason,
                                     field: str) -> None:
    outcome = run({**EVENT, **change}, key=key)
    assert isinstance(outcome, PoisonPill), outcome
    assert (outcome.reason_code, outcome.field) == (reason, field)


def test_a_value_not_of_the_declared_shape_is_named_in_the_message() -> None:
    only_account = MappingOverrides.model_validate({"org_id": {"path": "account", "pattern": "^org/(.+)$"}})
    mapping = only_account.over(MappingOverrides.model_validate(MAPPING.model_dump()))
    outcome = run(EVENT, mapping=mapping)
    assert isinstance(outcome, PoisonPill) and outcome.reason_code == PoisonReason.MISSING_ORG_ID
    assert outcome.message == "account 'acct/org-7/eu' is not of the declared shape ('^org/(.+)$')"


@pytest.mark.parametrize(("declaration", "message"), [
    ({"org_id": {"path": "a"}}, "no source for interaction_id, event_id, event_type, event_time"),
    ({"org_id": {}}, r"give exactly one of path, key, header, record_timestamp, topic, constant, column \(got none\)"),
    ({"org_id": {"path": "a", "split": "/", "pattern": "(a)"}}, "give split or pattern, not both"),
    ({"org_id": {"path": "a", "pattern": "a"}}, "must have exactly one group"),
    ({"org_id": {"constant": " "}}, "constant is blank"),
    ({"only": [{"path": "a"}]}, "give either equals or prefixes"),
])
def test_broken_declarations_are_refused(declaration: dict[str, Any], message: str) -> None:
    with pytest.raises((ValidationError, ValueError), match=message):
        MappingOverrides.model_validate(declaration).over()

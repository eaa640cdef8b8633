"""Fuzzing: `translate` returns a typed outcome for any bytes, and every draft it returns is valid Avro, for every
source format and for declared mappings (every kind of field source), JSON or framed Avro values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rekey.shared.avro import encode_body, frame, load_schema, parse_schema
from kafka_rekey.shared.translation import (
    AvroValues,
    DomainEventDraft,
    PoisonPill,
    Skip,
    SourceFormat,
    SourceRecord,
    Translation,
    to_avro_record,
    translate,
)
from kafka_rekey.shared.translation.mapping import MappingOverrides
from kafka_rekey.shared.translation.presets import GENESYS_NOTIFICATIONS

INTERACTION_EVENT = parse_schema(load_schema("interaction_event"))
DEBEZIUM_AVRO_ID = 41
AVRO = AvroValues({DEBEZIUM_AVRO_ID: (Path(__file__).parents[2] / "fixtures" / "sources" / "debezium-avro"
                                      / "interactions-value.avsc").read_text()}.get)
DECLARED = [
    GENESYS_NOTIFICATIONS.model_copy(update={"org_id": MappingOverrides.model_validate(
        {"org_id": {"constant": "org-1"}}).org_id}).over(),
    MappingOverrides.model_validate({
        "org_id": [{"header": "org"}, {"path": "tenant", "split": "/", "segment": 1}],
        "interaction_id": [{"key": True}, {"path": "ids.0"}],
        "event_id": {"path": "id"}, "event_type": {"path": "kind", "ids": "template", "lowercase": True},
        "event_time": [{"path": "at", "encoding": "epoch_us"}, {"path": "time", "encoding": "iso8601"},
                       {"record_timestamp": True}],
        "interaction_type": {"path": "channel", "pattern": "^(\\w+)"}, "payload": "body",
        "only": [{"path": "kind", "prefixes": ["conv"]}], "skip": [{"path": "kind", "equals": ["conv.ping"]}],
    }).over(),
]
EVERY_TRANSLATION = [f for f in SourceFormat if f is not SourceFormat.GENESYS_NOTIFICATIONS] + DECLARED
TRANSLATIONS = st.sampled_from(EVERY_TRANSLATION)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
ids = st.none() | st.integers(-5, 2**65) | st.text(max_size=6) | st.sampled_from(["org-1", "int-1", " "])
timestamps = st.none() | st.integers() | st.text(max_size=30) | st.sampled_from(
    ["2023-10-27T14:30:00Z", "2023-10-27T14:30:00", "9999-12-31T23:59:59.999999-23:59", "0001-01-01T00:00:00+23:59"]
)
genesys_like = st.fixed_dictionaries({}, optional={
    "orgId": ids, "interactionId": ids, "eventId": ids, "eventType": ids, "interactionType": ids,
    "timestamp": timestamps, "data": json_values, "extra": json_values,
})
rows = st.fixed_dictionaries({}, optional={
    "org_id": ids, "interaction_id": ids, "interaction_type": ids, "updated_at": timestamps, "status": json_values,
})
sources = st.fixed_dictionaries({}, optional={
    "schema": ids, "table": ids, "lsn": st.none() | st.integers(-(2**64), 2**65), "ts_ms": st.none() | st.integers(),
})
debezium_like = st.fixed_dictionaries({}, optional={
    "op": st.sampled_from(["c", "u", "d", "r", "t", "x"]) | json_values, "before": rows | json_values,
    "after": rows | json_values, "source": sources | json_values,
})
wrapped = debezium_like.map(lambda payload: {"schema": {"type": "struct"}, "payload": payload})
eventbridge_like = st.fixed_dictionaries({}, optional={
    "id": ids, "source": st.sampled_from(["aws.partner/genesys.com/cloud/o-1/bus", "aws.partner/x", ""]) | ids,
    "time": timestamps, "detail": st.fixed_dictionaries({}, optional={
        "topicName": st.sampled_from(["v2.detail.events.conversation.0f8fad5b-d9cb-469f-a165-70867728950e.acw",
                                      "v2.users.1.presence", "channel.metadata"]) | ids,
        "eventBody": st.fixed_dictionaries({}, optional={"conversationId": ids, "eventTime": timestamps,
                                                         "mediaType": ids}) | json_values,
        "timestamp": timestamps, "instanceArn": ids}),
})
declared_like = st.fixed_dictionaries({}, optional={
    "tenant": ids, "ids": st.lists(ids, max_size=2) | json_values, "id": ids, "at": timestamps, "time": timestamps,
    "kind": st.sampled_from(["conv.start", "conv.ping", "other"]) | ids, "channel": ids, "body": json_values,
})


def check(value: bytes | None, translation: Translation, key: bytes | None = None) -> None:
    outcome = translate(SourceRecord("t", 0, 1, key, value, {"org": b"\xff"}, timestamp_ms=-5), translation, AVRO)
    assert isinstance(outcome, DomainEventDraft | Skip | PoisonPill)
    if isinstance(outcome, DomainEventDraft):
        encode_body(INTERACTION_EVENT, to_avro_record(outcome, 1))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), TRANSLATIONS)
def test_arbitrary_bytes_never_raise(value: bytes, translation: Translation) -> None:
    check(value, translation)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), TRANSLATIONS, st.sampled_from([DEBEZIUM_AVRO_ID, 7]))
def test_arbitrary_framed_avro_bodies_never_raise(body: bytes, translation: Translation, schema_id: int) -> None:
    check(frame(schema_id, body), translation, frame(schema_id, body[:9]))


@settings(max_examples=400, deadline=None)
@given(json_values, TRANSLATIONS, st.none() | st.binary(max_size=8))
def test_arbitrary_json_never_raises(value: Any, translation: Translation, key: bytes | None) -> None:
    check(json.dumps(value).encode(), translation, key)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(genesys_like, debezium_like, wrapped, eventbridge_like, declared_like), TRANSLATIONS,
       st.none() | st.sampled_from([b"int-9", b"\xff", b" "]))
def test_near_valid_records_never_raise_and_drafts_are_valid_avro(value: dict[str, Any], translation: Translation,
                                                                  key: bytes | None) -> None:
    check(json.dumps(value).encode(), translation, key)


def test_deeply_nested_json_is_a_poison_pill() -> None:
    for translation in EVERY_TRANSLATION:
        outcome = translate(SourceRecord("t", 0, 1, None, b"[" * 100_000 + b"]" * 100_000), translation)
        assert isinstance(outcome, PoisonPill)

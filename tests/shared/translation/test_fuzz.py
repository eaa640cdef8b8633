"""Fuzzing: `translate` returns a typed outcome for any bytes, and every draft it returns is valid Avro."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.avro import encode_body, load_schema, parse_schema
from shared.translation import DomainEventDraft, PoisonPill, Skip, SourceFormat, SourceRecord, to_avro_record, translate

INTERACTION_EVENT = parse_schema(load_schema("interaction_event"))
FORMATS = st.sampled_from(list(SourceFormat))

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


def check(value: bytes | None, source_format: SourceFormat) -> None:
    outcome = translate(SourceRecord("t", 0, 1, None, value), source_format)
    assert isinstance(outcome, DomainEventDraft | Skip | PoisonPill)
    if isinstance(outcome, DomainEventDraft):
        encode_body(INTERACTION_EVENT, to_avro_record(outcome, 1))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), FORMATS)
def test_arbitrary_bytes_never_raise(value: bytes, source_format: SourceFormat) -> None:
    check(value, source_format)


@settings(max_examples=400, deadline=None)
@given(json_values, FORMATS)
def test_arbitrary_json_never_raises(value: Any, source_format: SourceFormat) -> None:
    check(json.dumps(value).encode(), source_format)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(genesys_like, debezium_like, wrapped), FORMATS)
def test_near_valid_records_never_raise_and_drafts_are_valid_avro(value: dict[str, Any],
                                                                  source_format: SourceFormat) -> None:
    check(json.dumps(value).encode(), source_format)


def test_deeply_nested_json_is_a_poison_pill() -> None:
    for source_format in SourceFormat:
        outcome = translate(SourceRecord("t", 0, 1, None, b"[" * 100_000 + b"]" * 100_000), source_format)
        assert isinstance(outcome, PoisonPill)

"""The shipped schemas load as package data, parse, and the codec encodes strictly and evolves on read."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.avro import AvroCodecError, decode_body, encode_body, load_schema, parse_schema, schema_names


def test_interaction_event_is_shipped_and_parses() -> None:
    assert "interaction_event" in schema_names()
    parsed = parse_schema(load_schema("interaction_event"))
    assert parsed["name"] == "dev.rekey.domain.InteractionEvent"


def test_an_unknown_schema_lists_the_shipped_ones() -> None:
    with pytest.raises(FileNotFoundError, match="interaction_event"):
        load_schema("no_such_schema")


def test_an_invalid_schema_is_refused() -> None:
    with pytest.raises(AvroCodecError, match="invalid Avro schema"):
        parse_schema({"type": "record", "name": "R", "fields": [{"name": "a", "type": "no_such_type"}]})


def test_strict_encoding_refuses_unknown_fields_and_reads_resolve_defaults() -> None:
    v1 = parse_schema({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})
    v2 = parse_schema({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "string"}, {"name": "b", "type": "int", "default": 7}]})
    with pytest.raises(AvroCodecError, match="record does not fit schema R"):
        encode_body(v1, {"a": "x", "b": 1})
    assert decode_body(encode_body(v1, {"a": "x"}), v1, v2) == {"a": "x", "b": 7}


def test_a_truncated_body_is_refused() -> None:
    schema = parse_schema({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})
    with pytest.raises(AvroCodecError, match="cannot decode"):
        decode_body(encode_body(schema, {"a": "hello"})[:3], schema)

"""A captured row's values as Kafka Connect encodes them -> plain values, by the Connect type the schema names."""

from __future__ import annotations

import base64

import pytest

from kafka_rekey.shared.translation.connect_values import (
    UNAVAILABLE,
    UNCHANGED,
    plain_row,
    row_converters,
    schema_block_types,
)

DECIMAL = "org.apache.kafka.connect.data.Decimal"


def unscaled(number: int) -> str:
    return base64.b64encode(number.to_bytes(max(1, (number.bit_length() + 8) // 8), "big", signed=True)).decode()


@pytest.mark.parametrize(("connect_type", "value", "plain"), [
    ((DECIMAL, "2"), unscaled(125), "1.25"),
    ((DECIMAL, "2"), unscaled(100), "1.00"),
    ((DECIMAL, "2"), unscaled(-5), "-0.05"),
    ((DECIMAL, "0"), unscaled(12345678901234567890), "12345678901234567890"),
    ((DECIMAL, "3"), (1250).to_bytes(2, "big"), "1.250"),  # Avro: the bytes themselves
    (("io.debezium.data.VariableScaleDecimal", None), {"scale": 3, "value": unscaled(-1500)}, "-1.500"),
    (("io.debezium.time.MicroTimestamp", None), 1_795_723_474_755_480, "2026-11-26T20:04:34.755480"),
    (("io.debezium.time.Timestamp", None), 1_795_723_474_000, "2026-11-26T20:04:34"),
    (("io.debezium.time.NanoTimestamp", None), 1_795_723_474_755_480_123, "2026-11-26T20:04:34.755480"),
    (("org.apache.kafka.connect.data.Timestamp", None), -1000, "1969-12-31T23:59:59"),
    (("io.debezium.time.Date", None), 20_419, "2025-11-27"),
    (("org.apache.kafka.connect.data.Date", None), 0, "1970-01-01"),
    (("io.debezium.time.MicroTime", None), 37_230_500_000, "10:20:30.500000"),
    (("io.debezium.time.Time", None), 37_230_000, "10:20:30"),
    (("io.debezium.time.ZonedTimestamp", None), "2026-11-26T10:00:00Z", "2026-11-26T10:00:00Z"),
    ((DECIMAL, "2"), "not base64!", "not base64!"),  # kept as encoded, never a crash
])
def test_a_typed_value_becomes_a_plain_value(connect_type: tuple[str, str | None], value: object,
                                             plain: object) -> None:
    row = plain_row({"column": value}, row_converters((("column", connect_type),)))
    assert row == {"column": plain}


def test_an_unavailable_toasted_value_is_named_unchanged_and_left_out() -> None:
    row = {"id": 1, "notes": UNAVAILABLE, "tags": [UNAVAILABLE], "status": "active", "agent_id": None,
           "blob": base64.b64encode(UNAVAILABLE.encode()).decode()}
    assert plain_row(row, ()) == {"id": 1, "status": "active", "agent_id": None,
                                  UNCHANGED: ["blob", "notes", "tags"]}


def test_the_schema_block_names_each_columns_type_and_scale() -> None:
    schema = {"type": "struct", "fields": [
        {"field": "before", "type": "struct", "fields": []},
        {"field": "after", "type": "struct", "fields": [
            {"field": "id", "type": "int64"},
            {"field": "amount", "type": "bytes", "name": DECIMAL, "parameters": {"scale": "2"}},
            {"field": "at", "type": "int64", "name": "io.debezium.time.MicroTimestamp"}]}]}
    assert schema_block_types(schema, "after") == (("amount", (DECIMAL, "2")),
                                                   ("at", ("io.debezium.time.MicroTimestamp", None)))
    assert schema_block_types(schema, "before") == ()
    assert schema_block_types(None, "after") == ()

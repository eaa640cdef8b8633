"""Source values in the Confluent wire format (Kafka Connect's AvroConverter, Debezium with Schema Registry):
decoded with the writer schema the registry holds under the value's schema id, looked up once per id.

The lookup (I/O) is the caller's: `AvroValues(lookup)` takes a function from a schema id to the schema's JSON
text, or None when the registry has no such id. What the lookup raises (the registry unreachable) propagates:
it is no fault of the record.

Values are decoded as their binary encoding says, without Avro logical types: a `timestamp-millis` stays epoch
milliseconds and a `decimal` its bytes, as Kafka Connect's JSON converter writes them, so a source reads the
same through either converter (`bytes` become base64 in a payload's JSON, as the JSON converter renders them).
What a Connect type means (`io.debezium.time.MicroTimestamp`, ...) is read from the schema's `connect.name`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_rekey.shared.avro import AvroCodecError, ParsedSchema, WireFormatError, decode_body, parse_schema, unframe
from kafka_rekey.shared.translation.connect_values import NO_TYPES, ConnectType, ConnectTypes, RowTypes
from kafka_rekey.shared.translation.fields import fail, json_object
from kafka_rekey.shared.translation.outcomes import PoisonReason

SchemaLookup = Callable[[int], str | None]
"""The writer schema's JSON text for a schema id; None when the registry has none under that id."""


def is_framed(value: bytes) -> bool:
    """Whether a value is in the Confluent wire format (JSON never starts with a NUL byte)."""
    return len(value) > 5 and value[0] == 0


def value_object(value: bytes, what: str, avro: AvroValues | None) -> tuple[dict[str, Any], WriterSchema | None]:
    """A JSON object value, or the record of a framed Avro value with its writer schema."""
    if not is_framed(value):
        return json_object(value, what), None
    if avro is None:
        fail(PoisonReason.UNDECODABLE, f"{what} is Avro in the Confluent wire format (schema id "
                                       f"{int.from_bytes(value[1:5], 'big')}), and no schema registry is set to "
                                       f"read it")
    return avro.decode(value, what)


@dataclass(frozen=True)
class WriterSchema:
    schema_id: int
    parsed: ParsedSchema
    row_types: RowTypes = NO_TYPES
    """For each record-typed field of the top-level record (a Debezium envelope's `before`, `after`), its fields'
    `connect.name` and decimal scale: `shared.translation.connect_values` reads its values by them."""


class AvroValues:
    """Decodes framed values; one per process (or Spark partition), as its cache of writer schemas."""

    def __init__(self, lookup: SchemaLookup) -> None:
        self._lookup = lookup
        self._schemas: dict[int, WriterSchema | str] = {}

    def decode(self, value: bytes, what: str) -> tuple[dict[str, Any], WriterSchema]:
        """The record a framed value holds and its writer schema; a poison pill naming `what` if it has none."""
        try:
            schema_id, body = unframe(value)
        except WireFormatError as error:
            fail(PoisonReason.UNDECODABLE, f"{what}: {error}")
        writer = self._writer(schema_id)
        if isinstance(writer, str):
            fail(PoisonReason.SCHEMA_INVALID, f"{what} names writer schema id {schema_id}: {writer}")
        try:
            record = decode_body(body, writer.parsed)
        except AvroCodecError as error:
            fail(PoisonReason.UNDECODABLE, f"{what} is not Avro of writer schema id {schema_id}: {error}")
        return record, writer

    def _writer(self, schema_id: int) -> WriterSchema | str:
        """The writer schema, or why there is none (the same answer for every record naming the id)."""
        if schema_id not in self._schemas:
            text = self._lookup(schema_id)
            try:
                self._schemas[schema_id] = "the schema registry does not hold it" if text is None \
                    else writer_schema(schema_id, text)
            except (ValueError, TypeError) as error:  # AvroCodecError and json's errors are ValueErrors
                self._schemas[schema_id] = f"not an Avro schema ({str(error)[:200]})"
        return self._schemas[schema_id]


def writer_schema(schema_id: int, text: str) -> WriterSchema:
    """Parse a registered schema for decoding (logical types left out) and note its Connect type names."""
    document = json.loads(text)
    return WriterSchema(schema_id, parse_schema(_without_logical_types(document)),
                        RowTypes(_connect_types(document)))


def _without_logical_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {key: _without_logical_types(value) for key, value in schema.items() if key != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(member) for member in schema]
    return schema


def _connect_types(schema: Any) -> dict[str, ConnectTypes]:
    """For each field of the top-level record whose type is a record (or a union with one, or the name of one
    defined earlier), the Connect types of that record's fields."""
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return {}
    named: dict[str, dict[str, Any]] = {}
    types: dict[str, ConnectTypes] = {}
    for outer in _record_fields(schema):
        inner = _record_of(outer.get("type"), named, schema.get("namespace"))
        if inner is not None:
            types[str(outer.get("name"))] = tuple(
                (str(column.get("name")), connect_type) for column in _record_fields(inner)
                if (connect_type := _connect_type(column.get("type"))) is not None)
    return types


def _record_fields(record: dict[str, Any] | None) -> list[dict[str, Any]]:
    fields = record.get("fields") if record is not None else None
    return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []


def _record_of(schema: Any, named: dict[str, dict[str, Any]], namespace: object) -> dict[str, Any] | None:
    if isinstance(schema, list):
        for member in schema:
            record = _record_of(member, named, namespace)
            if record is not None:
                return record
        return None
    if isinstance(schema, str):
        return named.get(schema) or named.get(f"{namespace}.{schema}")
    if isinstance(schema, dict) and schema.get("type") == "record":
        space = schema.get("namespace", namespace)
        name = str(schema.get("name"))
        named[name] = schema
        named[name if "." in name else f"{space}.{name}"] = schema
        return schema
    return None


def _connect_type(schema: Any) -> ConnectType | None:
    if isinstance(schema, list):
        return next((found for member in schema if (found := _connect_type(member)) is not None), None)
    if isinstance(schema, dict) and isinstance(schema.get("connect.name"), str):
        parameters = schema.get("connect.parameters")
        scale = parameters.get("scale") if isinstance(parameters, dict) else None
        return str(schema["connect.name"]), scale if isinstance(scale, str) else None
    return None

"""Avro binary bodies (no framing) with fastavro: parse once, encode strictly, decode with schema resolution."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

from fastavro import parse_schema as _fastavro_parse
from fastavro import schemaless_reader, schemaless_writer
from fastavro.schema import SchemaParseException
from fastavro.validation import ValidationError, validate

# fastavro's parsed form of a schema (a dict for records); opaque to callers.
ParsedSchema = Any


class AvroCodecError(ValueError):
    """A schema that does not parse, a record that does not fit its schema, or a body that does not decode."""


def schema_text(schema: Mapping[str, Any] | str) -> str:
    """The compact JSON text of a schema, as registered (stable for the same schema object)."""
    if isinstance(schema, str):
        return json.dumps(json.loads(schema), separators=(",", ":"))
    return json.dumps(schema, separators=(",", ":"))


def parse_schema(schema: Mapping[str, Any] | str) -> ParsedSchema:
    """Parse and check a schema (JSON text or object) once; reuse the result for every record."""
    try:
        loaded = json.loads(schema) if isinstance(schema, str) else dict(schema)
        return _fastavro_parse(loaded)
    except (ValueError, TypeError, KeyError, SchemaParseException) as error:
        raise AvroCodecError(f"invalid Avro schema: {error}") from error


def encode_body(parsed: ParsedSchema, record: Mapping[str, Any]) -> bytes:
    """Encode `record` strictly: unknown fields, missing fields without defaults and wrong types are errors."""
    out = io.BytesIO()
    try:
        schemaless_writer(out, parsed, dict(record), strict=True)
    except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as error:
        reason = _explain(parsed, record, error)
        raise AvroCodecError(f"record does not fit schema {_name(parsed)}: {reason}") from error
    return out.getvalue()


def decode_body(body: bytes, writer: ParsedSchema, reader: ParsedSchema | None = None) -> dict[str, Any]:
    """Decode a body written with `writer`, resolved to `reader` (Avro schema evolution) when given."""
    try:
        record = schemaless_reader(io.BytesIO(body), writer, reader)
    except Exception as error:  # fastavro raises many types (EOFError, SchemaResolutionError, ...)
        raise AvroCodecError(f"cannot decode an Avro body as {_name(writer)}: {error!r}") from error
    if not isinstance(record, dict):
        raise AvroCodecError(f"decoded a {type(record).__name__}, expected a record of {_name(writer)}")
    return record


def _name(parsed: ParsedSchema) -> str:
    return str(parsed.get("name", "?")) if isinstance(parsed, dict) else repr(parsed)


def _explain(parsed: ParsedSchema, record: Mapping[str, Any], error: Exception) -> str:
    try:
        validate(dict(record), parsed, raise_errors=True, strict=True)
    except ValidationError as invalid:
        return "; ".join(str(e) for e in invalid.errors)
    return str(error)

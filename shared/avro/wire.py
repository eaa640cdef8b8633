"""The Confluent wire format: magic byte 0, the 4-byte big-endian schema id, then the Avro binary body."""

from __future__ import annotations

import struct

MAGIC_BYTE = 0
_HEADER = struct.Struct(">BI")
HEADER_SIZE = _HEADER.size
MAX_SCHEMA_ID = 2**32 - 1


class WireFormatError(ValueError):
    """Bytes that are not a Confluent-framed message, or a schema id that cannot be framed."""


def frame(schema_id: int, body: bytes) -> bytes:
    """Prefix an Avro body with the magic byte and `schema_id`."""
    if not 0 <= schema_id <= MAX_SCHEMA_ID:
        raise WireFormatError(f"schema id {schema_id} does not fit the 4-byte unsigned id of the wire format")
    return _HEADER.pack(MAGIC_BYTE, schema_id) + body


def unframe(data: bytes) -> tuple[int, bytes]:
    """Split a framed message into (schema id, Avro body)."""
    if len(data) < HEADER_SIZE:
        raise WireFormatError(
            f"message of {len(data)} bytes is shorter than the {HEADER_SIZE}-byte wire-format header "
            f"(magic byte + schema id)"
        )
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC_BYTE:
        raise WireFormatError(
            f"unknown magic byte {magic:#04x} (expected {MAGIC_BYTE:#04x}): not a Confluent-framed Avro message"
        )
    return schema_id, data[HEADER_SIZE:]

"""Avro helpers without I/O: Confluent wire framing, the schemas shipped in `shared/schemas`, body codecs."""

from kafka_rekey.shared.avro.codec import (
    AvroCodecError,
    ParsedSchema,
    decode_body,
    encode_body,
    parse_schema,
    schema_text,
)
from kafka_rekey.shared.avro.schemas import load_schema, schema_names
from kafka_rekey.shared.avro.split import SplitEncoder, stamp_sequence, wire_header, zigzag_varint
from kafka_rekey.shared.avro.wire import MAGIC_BYTE, WireFormatError, frame, unframe

__all__ = [
    "MAGIC_BYTE",
    "AvroCodecError",
    "ParsedSchema",
    "SplitEncoder",
    "WireFormatError",
    "decode_body",
    "encode_body",
    "frame",
    "load_schema",
    "parse_schema",
    "schema_names",
    "schema_text",
    "stamp_sequence",
    "unframe",
    "wire_header",
    "zigzag_varint",
]

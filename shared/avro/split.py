"""Avro values in the Confluent wire format, encoded before the sequence is known and stamped later.

The Avro binary encoding of a record is the concatenation of its fields' encodings in schema order, and a
`long` is a zig-zag varint. So an `InteractionEvent` body with sequence `n` is exactly

    encode(fields before `sequence`) + varint(zigzag(n)) + encode(fields after `sequence`)

Translation (the live translate stage, the backfill's executors) encodes the two halves once per record,
before the sequence is known; the sequencer (the live sequence stage, or the JVM after the backfill's Spark
window) concatenates the wire header, the head, the varint of the sequence and the tail. Tests prove the bytes
equal `AvroSerde.encode` of the whole record.

The halves come from one encoding of the whole record with a marker sequence, -2**63, whose varint
(`ff` x 9, `01`) is cut out: one fastavro call instead of one per half (each call costs about 4 us before it
writes a byte). The marker's bytes can stand elsewhere only in a field that holds them (a long of -2**63, raw
bytes); the cut is made only where they stand exactly once, which is then the sequence. Otherwise the record is
encoded once more with sequence 0: the two encodings agree up to the sequence, whose first byte differs (`ff`
against `00`), so their common prefix is the head.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_rekey.shared.avro.codec import encode_body, parse_schema
from kafka_rekey.shared.avro.wire import frame

SEQUENCE_FIELD = "sequence"
_MARKER = -(2**63)


class SplitEncoder:
    """Encodes a record's fields before and after `split_field` separately (see the module doc)."""

    def __init__(self, schema: Mapping[str, Any], split_field: str = SEQUENCE_FIELD) -> None:
        fields = list(schema["fields"])
        names = [f["name"] for f in fields]
        if split_field not in names:
            raise ValueError(f"schema {schema.get('name')!r} has no field {split_field!r} to stamp later")
        index = names.index(split_field)
        if fields[index]["type"] != "long":
            raise ValueError(f"field {split_field!r} of {schema.get('name')!r} must be a plain long to be "
                             f"stamped after encoding, found {fields[index]['type']!r}")
        self.split_field = split_field
        self._whole = parse_schema(dict(schema))

    def encode_parts(self, record: Mapping[str, Any]) -> tuple[bytes, bytes]:
        """The encoded fields before and after the split field (strict: a bad record raises AvroCodecError)."""
        whole = encode_body(self._whole, {**record, self.split_field: _MARKER})
        at = whole.find(_MARKER_VARINT)
        end = at + len(_MARKER_VARINT)
        if whole.find(_MARKER_VARINT, end) == -1:
            return whole[:at], whole[end:]
        return self._cut_at_the_difference(record, whole)

    def _cut_at_the_difference(self, record: Mapping[str, Any], whole: bytes) -> tuple[bytes, bytes]:
        """For a record where the marker's bytes stand more than once: the head is what `whole` (marker sequence)
        and the encoding with sequence 0 share, the tail what follows that sequence's one byte."""
        zero = encode_body(self._whole, {**record, self.split_field: 0})
        at = next(index for index, (ours, theirs) in enumerate(zip(whole, zero, strict=False)) if ours != theirs)
        return zero[:at], zero[at + 1:]

    @staticmethod
    def assemble(schema_id: int, head: bytes, sequence: int, tail: bytes) -> bytes:
        """The framed value (what the JVM builds in `value_column`), for tests and the single-process path."""
        return frame(schema_id, head + zigzag_varint(sequence) + tail)


def stamp_sequence(framed_head: bytes, sequence: int, tail: bytes) -> bytes:
    """The whole framed value from a head that already carries the wire header (the live sequence stage)."""
    return framed_head + zigzag_varint(sequence) + tail


def zigzag_varint(value: int) -> bytes:
    """Avro's encoding of a long: zig-zag, then little-endian base-128 varint."""
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


_MARKER_VARINT = zigzag_varint(_MARKER)


def wire_header(schema_id: int) -> bytes:
    """Magic byte and schema id: the Confluent wire-format prefix, by `shared.avro.frame`."""
    return frame(schema_id, b"")

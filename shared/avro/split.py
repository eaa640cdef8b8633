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
bytes); the cut is made only where they stand exactly once, which is then the sequence, else both halves are
encoded on their own.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shared.avro.codec import encode_body, parse_schema
from shared.avro.wire import frame

SEQUENCE_FIELD = "sequence"
_MARKER = -(2**63)
_NAMED = ("record", "enum", "fixed")


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
        self.head_names = names[:index]
        self.tail_names = names[index + 1:]
        namespace = schema.get("namespace")
        head_fields = fields[:index]
        defined = _named_types(head_fields, namespace)
        tail_fields = _inline_references(fields[index + 1:], defined, namespace)
        base = {k: v for k, v in schema.items() if k not in ("fields", "name")}
        self._whole = parse_schema(dict(schema))
        self._head = parse_schema({**base, "name": f"{schema['name']}Head", "fields": head_fields})
        self._tail = parse_schema({**base, "name": f"{schema['name']}Tail", "fields": tail_fields})

    def encode_parts(self, record: Mapping[str, Any]) -> tuple[bytes, bytes]:
        """The encoded fields before and after the split field (strict: a bad record raises AvroCodecError)."""
        whole = encode_body(self._whole, {**record, self.split_field: _MARKER})
        at = whole.find(_MARKER_VARINT)
        end = at + len(_MARKER_VARINT)
        if whole.find(_MARKER_VARINT, end) == -1:
            return whole[:at], whole[end:]
        return self._encode_halves(record)

    def _encode_halves(self, record: Mapping[str, Any]) -> tuple[bytes, bytes]:
        """Each half on its own: for a record where the marker's bytes stand more than once."""
        head = encode_body(self._head, {name: record[name] for name in self.head_names if name in record})
        tail = encode_body(self._tail, {name: record[name] for name in self.tail_names if name in record})
        return head, tail

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


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _named_types(fields: list[dict[str, Any]], namespace: str | None) -> dict[str, Any]:
    """Named types (records, enums, fixed) defined inside `fields`, by short and full name."""
    found: dict[str, Any] = {}

    def walk(node: Any, space: str | None) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, space)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in _NAMED and "name" in node:
                own = node.get("namespace", space)
                found[node["name"]] = found[_full_name(node["name"], own)] = node
                for field in node.get("fields", []):
                    walk(field["type"], own)
            elif kind == "array":
                walk(node.get("items"), space)
            elif kind == "map":
                walk(node.get("values"), space)
            elif isinstance(kind, dict | list):
                walk(kind, space)

    for field in fields:
        walk(field["type"], namespace)
    return found


def _inline_references(fields: list[dict[str, Any]], defined: Mapping[str, Any],
                       namespace: str | None) -> list[dict[str, Any]]:
    """`fields` with references to types defined in the head replaced by their definitions (first use only)."""
    fields = copy.deepcopy(fields)
    used: set[int] = set()

    def fix(node: Any) -> Any:
        if isinstance(node, str) and (node in defined or _full_name(node, namespace) in defined):
            definition = defined.get(node) or defined[_full_name(node, namespace)]
            if id(definition) in used:
                return node
            used.add(id(definition))
            return copy.deepcopy(definition)
        if isinstance(node, list):
            return [fix(item) for item in node]
        if isinstance(node, dict):
            if node.get("type") == "array":
                return {**node, "items": fix(node["items"])}
            if node.get("type") == "map":
                return {**node, "values": fix(node["values"])}
            if isinstance(node.get("type"), dict | list | str) and node.get("type") not in _NAMED:
                return {**node, "type": fix(node["type"])}
        return node

    for field in fields:
        field["type"] = fix(field["type"])
    return fields

"""Confluent wire framing: header layout and the errors for bytes that are not framed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.avro import WireFormatError, frame, unframe


def test_frame_layout_is_magic_zero_then_big_endian_id() -> None:
    assert frame(0x01020304, b"body") == b"\x00\x01\x02\x03\x04body"


@given(st.integers(0, 2**32 - 1), st.binary())
def test_unframe_inverts_frame(schema_id: int, body: bytes) -> None:
    assert unframe(frame(schema_id, body)) == (schema_id, body)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00\x00\x01"])
def test_short_input_names_the_length(data: bytes) -> None:
    with pytest.raises(WireFormatError, match=f"message of {len(data)} bytes is shorter"):
        unframe(data)


def test_a_wrong_magic_byte_is_named() -> None:
    with pytest.raises(WireFormatError, match="unknown magic byte 0x7b"):
        unframe(b'{"json": true}')


@pytest.mark.parametrize("schema_id", [-1, 2**32])
def test_ids_outside_four_unsigned_bytes_are_refused(schema_id: int) -> None:
    with pytest.raises(WireFormatError, match=str(schema_id)):
        frame(schema_id, b"")

"""The internal envelope between the ACL's stages, including records an earlier release left in the topic."""

from __future__ import annotations

import msgspec
import pytest

from services.acl.envelope import Envelope, decode_envelope, encode_envelope

ENVELOPE = Envelope("interaction_events_low_v2", "org-1:call-1", b"\x00head", b"tail", "e-1", "src/0/5")


def test_an_envelope_round_trips() -> None:
    assert decode_envelope(encode_envelope(ENVELOPE)) == ENVELOPE


def test_an_envelope_written_with_its_partition_is_still_read() -> None:
    """Before 2026-11-25 the output partition was the second field; such records outlive an upgrade."""
    legacy = msgspec.msgpack.encode(["interaction_events_low_v2", 3, "org-1:call-1", b"\x00head", b"tail", "e-1",
                                     "src/0/5"])
    assert decode_envelope(legacy) == ENVELOPE


def test_anything_else_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_envelope(msgspec.msgpack.encode(["t", "k"]))

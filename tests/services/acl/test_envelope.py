"""The internal records between the ACL's stages, including records an earlier release left in the topic."""

from __future__ import annotations

import msgspec
import pytest

from kafka_rekey.services.acl.envelope import Envelope, decode_envelopes, encode_envelopes
from kafka_rekey.services.runtime.state import GROUPED_RECORD_BYTES

ENVELOPE = Envelope("interaction_events_low_v2", "org-1:call-1", b"\x00head", b"tail", "e-1", "src/0/5")


def _envelope(number: int, payload: int = 100) -> Envelope:
    return Envelope("interaction_events_low_v2", f"org-1:call-{number}", b"\x00head", b"t" * payload, f"e-{number}",
                    f"src/0/{number}")


def test_a_batch_of_envelopes_is_one_record_that_round_trips_in_order() -> None:
    envelopes = [_envelope(number) for number in range(500)]
    values = encode_envelopes(envelopes)
    assert len(values) == 1
    assert decode_envelopes(values[0]) == envelopes


def test_a_large_batch_is_split_into_records_under_the_limit_keeping_the_order() -> None:
    envelopes = [_envelope(number, payload=1_000) for number in range(1_000)]  # about 1.1 MB in all
    values = encode_envelopes(envelopes)
    assert len(values) > 4
    assert all(len(value) <= GROUPED_RECORD_BYTES for value in values)
    assert [e for value in values for e in decode_envelopes(value)] == envelopes


def test_an_envelope_larger_than_the_limit_is_a_record_of_its_own() -> None:
    envelopes = [_envelope(1), _envelope(2, payload=GROUPED_RECORD_BYTES), _envelope(3)]
    values = encode_envelopes(envelopes)
    assert [decode_envelopes(value) for value in values] == [[envelopes[0]], [envelopes[1]], [envelopes[2]]]


def test_a_record_of_one_envelope_is_still_read() -> None:
    """Before 2026-11-26 each envelope was a record of its own; such records outlive an upgrade."""
    assert decode_envelopes(msgspec.msgpack.encode(ENVELOPE)) == [ENVELOPE]


def test_an_envelope_written_with_its_partition_is_still_read() -> None:
    """Before 2026-11-25 the output partition was the second field."""
    legacy = msgspec.msgpack.encode(["interaction_events_low_v2", 3, "org-1:call-1", b"\x00head", b"tail", "e-1",
                                     "src/0/5"])
    assert decode_envelopes(legacy) == [ENVELOPE]


def test_anything_else_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_envelopes(msgspec.msgpack.encode(["t", "k"]))

"""What the translate stage passes to the sequence stage over the internal sequencing topic.

An `Envelope` carries one family's domain record, already Avro-encoded around its sequence (`head` with the
wire header, `tail`), its topic and key, its dedupe id and source position. One internal record carries the
`Envelopes` of one translate batch for one sequencing partition, in order: the partition is the one Java's
partitioner picks for the output key, so one key's envelopes meet one sequencer, as they did when each envelope
was a record of its own keyed by the output key (such records, still in the topic across an upgrade, are read
too). Grouping them spares two `produce` and two consumed records per event and family. msgpack as positional
arrays: compact, and decoded once by the sequencer.
"""

from __future__ import annotations

import msgspec

from kafka_rekey.services.runtime.state import encode_grouped
from kafka_rekey.shared.pipeline import DomainRecord


class Envelope(msgspec.Struct, array_like=True, frozen=True):
    topic: str
    key: str
    head: bytes
    tail: bytes
    dedupe_id: str
    src: str

    @classmethod
    def of(cls, record: DomainRecord) -> Envelope:
        target = record.route
        return cls(target.topic, target.key, record.head, record.tail, record.dedupe_id, record.src)


class Envelopes(msgspec.Struct, array_like=True, frozen=True, tag=1):
    """The envelopes of one internal record; the tag (its first element) tells it from a lone `Envelope`."""

    items: list[Envelope]


_encode = msgspec.msgpack.Encoder().encode
_decode_many = msgspec.msgpack.Decoder(Envelopes).decode
_decode = msgspec.msgpack.Decoder(Envelope).decode
_decode_fields = msgspec.msgpack.Decoder(list[object]).decode


def _encode_many(envelopes: list[Envelope]) -> bytes:
    return _encode(Envelopes(envelopes))


def encode_envelopes(envelopes: list[Envelope]) -> list[bytes]:
    """The values of the internal records carrying `envelopes` in order, each at most `GROUPED_RECORD_BYTES`
    (unless one envelope alone is larger)."""
    return encode_grouped(envelopes, _encode_many)


def decode_envelopes(data: bytes) -> list[Envelope]:
    """The envelopes of one internal record, whichever release wrote it."""
    try:
        return _decode_many(data).items
    except msgspec.ValidationError:
        return [_decode_one(data)]


def _decode_one(data: bytes) -> Envelope:
    """A record of one envelope, as releases before `Envelopes` wrote it."""
    try:
        return _decode(data)
    except msgspec.ValidationError:
        # Written by an older release, with the output partition second: still in the sequencing topic across an
        # upgrade, and sequenced like any other (the partitioner picks the partition it named).
        fields = _decode_fields(data)
        if len(fields) != 7:
            raise
        del fields[1]
        return msgspec.convert(fields, Envelope)

"""The record passed from the translate stage to the sequence stage over the internal sequencing topic.

It carries one family's domain record, already Avro-encoded around its sequence (`head` with the wire header,
`tail`), its topic and key (the producer's `murmur2_random` partitioner places it as Java's would), its dedupe
id and source position. msgpack as a positional array: compact, and decoded
once by the sequencer. The internal topic is keyed by the output key, so one key's records meet one sequencer.
"""

from __future__ import annotations

import msgspec

from shared.pipeline import DomainRecord


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


encode_envelope = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Envelope).decode
_decode_fields = msgspec.msgpack.Decoder(list[object]).decode


def decode_envelope(data: bytes) -> Envelope:
    try:
        return _decode(data)
    except msgspec.ValidationError:
        # Written before 2026-11-25, with the output partition second: still in the sequencing topic across an
        # upgrade, and sequenced like any other (the partitioner picks the partition it named).
        fields = _decode_fields(data)
        if len(fields) != 7:
            raise
        del fields[1]
        return msgspec.convert(fields, Envelope)

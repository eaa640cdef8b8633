"""The record passed from the translate stage to the sequence stage over the internal sequencing topic.

It carries one family's domain record, already Avro-encoded around its sequence (`head` with the wire header,
`tail`), where it goes, its dedupe id and source position. msgpack as a positional array: compact, and decoded
once by the sequencer. The internal topic is keyed by the output key, so one key's records meet one sequencer.
"""

from __future__ import annotations

import msgspec

from shared.pipeline import DomainRecord


class Envelope(msgspec.Struct, array_like=True, frozen=True):
    topic: str
    partition: int
    key: str
    head: bytes
    tail: bytes
    dedupe_id: str
    src: str

    @classmethod
    def of(cls, record: DomainRecord) -> Envelope:
        target = record.route
        return cls(target.topic, target.partition, target.key, record.head, record.tail, record.dedupe_id,
                   record.src)


encode_envelope = msgspec.msgpack.Encoder().encode
decode_envelope = msgspec.msgpack.Decoder(Envelope).decode

"""The record passed from the translate stage to the sequence stage over the internal sequencing topic.

It carries the domain record (sequence not yet stamped), where it must go and what dedupes it. The internal
topic is keyed by the output key and partitioned by it, so one key's events meet one sequencer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.handoff import sequence_key

_ENCODER = json.JSONEncoder(separators=(",", ":"))


@dataclass(frozen=True)
class Envelope:
    record: dict[str, Any]
    dedupe_id: str
    source: str
    topic: str
    partition: int
    key: str

    @property
    def sequence_key(self) -> str:
        return sequence_key(self.topic, self.key)

    def to_bytes(self) -> bytes:
        # The fields by hand, not `dataclasses.asdict`: that deep-copies `record` on every call (a third of the
        # translate stage's CPU). Same keys in the same order, so the same bytes.
        return _ENCODER.encode({"record": self.record, "dedupe_id": self.dedupe_id, "source": self.source,
                                "topic": self.topic, "partition": self.partition, "key": self.key}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Envelope:
        return cls(**json.loads(data))

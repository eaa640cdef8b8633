"""What a redrive does with one selected dead letter, given what the current translation makes of it.

- redriven before (its position is in the redrive memory): nothing (AlreadyRedriven);
- translates now: re-sent to its source topic and partition with its original key, value and headers, plus
  `rekey.redriven.from` naming the dead letter (Resend);
- a poison pill still: left, with the reason it has now (StillDead);
- a counted skip now (a heartbeat, say): left too, with the skip's reason (StillSkipped): re-sending it would
  only be skipped again.
"""

from __future__ import annotations

import json

import msgspec

from kafka_rekey.shared.pipeline import DeadLetter, Processed, Routed
from kafka_rekey.shared.redrive.letters import DeadLetterRecord

REDRIVEN_FROM_HEADER = "rekey.redriven.from"


class Resend(msgspec.Struct, frozen=True):
    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    timestamp_ms: int


class AlreadyRedriven(msgspec.Struct, frozen=True):
    position: str


class StillDead(msgspec.Struct, frozen=True):
    reason: str
    field: str | None
    message: str


class StillSkipped(msgspec.Struct, frozen=True):
    reason: str
    message: str


Verdict = Resend | AlreadyRedriven | StillDead | StillSkipped


def decide(letter: DeadLetterRecord, processed: Processed | None) -> Verdict:
    """The verdict on `letter`; `processed` is the current translation of its source record, None when its
    position is already in the redrive memory."""
    if processed is None:
        return AlreadyRedriven(letter.position)
    if isinstance(processed, Routed):
        headers = [*((name, value) for name, value in letter.original_headers if name != REDRIVEN_FROM_HEADER),
                   (REDRIVEN_FROM_HEADER, letter.position.encode())]
        # The dead letter's timestamp stands in for the source record's, which the dead letter does not keep.
        return Resend(letter.source_topic, letter.source_partition, letter.key, letter.value, headers,
                      letter.timestamp_ms)
    if isinstance(processed, DeadLetter):
        pill = processed.pill
        return StillDead(str(pill.reason_code), pill.field, pill.message)
    return StillSkipped(str(processed.reason), processed.message)


def memory_value(letter: DeadLetterRecord, redriven_at_ms: int) -> bytes:
    """The redrive memory's record for a re-sent dead letter (keyed by its position)."""
    return json.dumps({"source": letter.source_position, "redriven_at_ms": redriven_at_ms}, sort_keys=True).encode()

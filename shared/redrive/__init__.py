"""Dead letters read back and redriven: what one carries, which ones an operator selects, what a redrive does with
each. Pure: `services.deadletters` reads the topic, translates and sends."""

from kafka_rekey.shared.redrive.decisions import (
    REDRIVEN_FROM_HEADER,
    AlreadyRedriven,
    Resend,
    StillDead,
    StillSkipped,
    Verdict,
    decide,
    memory_value,
)
from kafka_rekey.shared.redrive.letters import DeadLetterRecord, Selection, hour_of, parse_dead_letter

__all__ = [
    "REDRIVEN_FROM_HEADER",
    "AlreadyRedriven",
    "DeadLetterRecord",
    "Resend",
    "Selection",
    "StillDead",
    "StillSkipped",
    "Verdict",
    "decide",
    "hour_of",
    "memory_value",
    "parse_dead_letter",
]

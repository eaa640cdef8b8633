"""The anti-corruption layer's translation of source records (event streams, CDC) into domain event drafts."""

from shared.translation.avro_values import AvroValues
from shared.translation.debezium import cdc_event_id
from shared.translation.outcomes import (
    DomainEventDraft,
    Outcome,
    PoisonPill,
    PoisonReason,
    Skip,
    SkipReason,
    to_avro_record,
)
from shared.translation.source import SourceFormat, SourceRecord
from shared.translation.translate import Translation, compiled, translate

__all__ = [
    "AvroValues",
    "DomainEventDraft",
    "Outcome",
    "PoisonPill",
    "PoisonReason",
    "Skip",
    "SkipReason",
    "SourceFormat",
    "SourceRecord",
    "Translation",
    "cdc_event_id",
    "compiled",
    "to_avro_record",
    "translate",
]

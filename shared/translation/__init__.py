"""The anti-corruption layer's translation of source records (event streams, CDC) into domain event drafts."""

from kafka_rekey.shared.translation.avro_values import AvroValues
from kafka_rekey.shared.translation.debezium import (
    RememberedRows,
    RowIds,
    RowMemory,
    cdc_event_id,
    ids_to_remember,
    row_key,
)
from kafka_rekey.shared.translation.outcomes import (
    DomainEventDraft,
    Outcome,
    PoisonPill,
    PoisonReason,
    Skip,
    SkipReason,
    to_avro_record,
)
from kafka_rekey.shared.translation.source import SourceFormat, SourceRecord
from kafka_rekey.shared.translation.translate import Translation, compiled, remembers_rows, translate

__all__ = [
    "AvroValues",
    "DomainEventDraft",
    "Outcome",
    "PoisonPill",
    "PoisonReason",
    "RememberedRows",
    "RowIds",
    "RowMemory",
    "Skip",
    "SkipReason",
    "SourceFormat",
    "SourceRecord",
    "Translation",
    "cdc_event_id",
    "compiled",
    "ids_to_remember",
    "remembers_rows",
    "row_key",
    "to_avro_record",
    "translate",
]

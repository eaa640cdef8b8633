"""`translate(record, source_format)`: the one anti-corruption-layer entry point, used identically by the live
service and the backfill. Pure and deterministic (no clock, no randomness); it never raises for any record
bytes: every outcome is a DomainEventDraft, a Skip or a PoisonPill."""

from __future__ import annotations

from shared.translation.debezium import translate_change
from shared.translation.event_stream import translate_event
from shared.translation.fields import Invalid
from shared.translation.outcomes import Outcome
from shared.translation.source import SourceFormat, SourceRecord

_TRANSLATORS = {SourceFormat.GENESYS: translate_event, SourceFormat.DEBEZIUM: translate_change}


def translate(record: SourceRecord, source_format: SourceFormat | str) -> Outcome:
    """Translate one source record; ValueError only for an unknown `source_format` (a configuration error)."""
    try:
        translator = _TRANSLATORS[SourceFormat(source_format)]
    except ValueError:
        known = ", ".join(f.value for f in SourceFormat)
        raise ValueError(
            f"unknown source format {source_format!r} for topic {record.topic!r} (known: {known})"
        ) from None
    try:
        return translator(record)
    except Invalid as invalid:
        return invalid.pill

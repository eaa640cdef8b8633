"""`translate(record, translation)`: the one anti-corruption-layer entry point, used identically by the live
service and the backfill. Pure and deterministic (no clock, no randomness); it never raises for any record
bytes: every outcome is a DomainEventDraft, a Skip or a PoisonPill.

`translation` is a source format (a translator in code, or a mapping preset), a catalog source's mapping, or a
Debezium source's declaration. `avro` reads values in the Confluent wire format (Debezium's Avro converter, any
Avro source a mapping declares); `ccaas-json` is JSON by definition. `rows` remembers the ids of captured rows
for deletes that do not carry them (`remembers_rows` says which translations use it)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial

from kafka_rekey.shared.translation.avro_values import AvroValues
from kafka_rekey.shared.translation.debezium import ChangeTranslator, DebeziumSource, RowMemory
from kafka_rekey.shared.translation.event_stream import translate_event
from kafka_rekey.shared.translation.fields import Invalid
from kafka_rekey.shared.translation.mapping import MappedTranslator, SourceMapping
from kafka_rekey.shared.translation.outcomes import Outcome
from kafka_rekey.shared.translation.presets import PRESETS
from kafka_rekey.shared.translation.source import SourceFormat, SourceRecord

Translation = SourceFormat | str | SourceMapping | DebeziumSource
"""A source format, a mapping, or a Debezium source's declaration."""
Translator = Callable[[SourceRecord, AvroValues | None, RowMemory | None], Outcome]


def _ccaas_json(record: SourceRecord, _avro: AvroValues | None, _rows: RowMemory | None) -> Outcome:
    return translate_event(record)


def translate(record: SourceRecord, translation: Translation, avro: AvroValues | None = None,
              rows: RowMemory | None = None) -> Outcome:
    """Translate one source record; ValueError only for an unknown source format (a configuration error).
    What `avro`'s schema lookup raises (the registry unreachable) propagates."""
    try:
        translator = translator_for(translation)
    except ValueError as error:
        raise ValueError(f"topic {record.topic!r}: {error}") from None
    return _outcome(translator, avro, rows, record)


def compiled(translation: Translation, avro: AvroValues | None = None,
             rows: RowMemory | None = None) -> Callable[[SourceRecord], Outcome]:
    """`translate` bound to one translation, for a loop over its records (the translator is looked up once)."""
    return partial(_outcome, translator_for(translation), avro, rows)


def remembers_rows(translation: Translation) -> bool:
    """Whether the translation reads a `RowMemory` (a CDC source: its deletes may lack the ids)."""
    return isinstance(translation, DebeziumSource) or translation == SourceFormat.DEBEZIUM


def _outcome(translator: Translator, avro: AvroValues | None, rows: RowMemory | None,
             record: SourceRecord) -> Outcome:
    try:
        return translator(record, avro, rows)
    except Invalid as invalid:
        return invalid.pill


@lru_cache(maxsize=256)
def translator_for(translation: Translation) -> Translator:
    """The translator of a format or mapping, compiled once."""
    if isinstance(translation, SourceMapping):
        return MappedTranslator(translation)
    if isinstance(translation, DebeziumSource):
        return ChangeTranslator(translation)
    try:
        source_format = SourceFormat(translation)
    except ValueError:
        known = ", ".join(f.value for f in SourceFormat)
        raise ValueError(f"unknown source format {translation!r} (known: {known})") from None
    if source_format in PRESETS:
        try:
            return MappedTranslator(PRESETS[source_format].over())
        except ValueError as incomplete:
            raise ValueError(f"format {source_format}: {incomplete}: declare the source in the catalog with "
                             f"a mapping for it") from None
    if source_format is SourceFormat.DEBEZIUM:
        return ChangeTranslator()
    return _ccaas_json

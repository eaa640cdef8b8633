"""One source record through translate -> route -> the output records, for every component that writes them.

The live translate stage, the Spark backfill and the benchmark all call `RecordPipeline.process`, so all place,
key and encode every record identically:
- a `Routed` event: the draft and one `DomainRecord` per family the source feeds (topic, key, partition, and
  the Avro value split around the not-yet-known sequence, `shared.avro.split`);
- a `DeadLetter`: the original key, value and headers plus the `dlq.*` context, for the dead-letter topic;
- a `Skip`: counted by reason, nothing written.

A domain record's headers are `sequence_headers(sequence, src)` once the sequencer has numbered it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import msgspec

from kafka_rekey.shared.avro import SplitEncoder, load_schema
from kafka_rekey.shared.catalog import Catalog, FamilyTable
from kafka_rekey.shared.deadletter import dead_letter_headers
from kafka_rekey.shared.routing import Route, route_in
from kafka_rekey.shared.translation import (
    AvroValues,
    DomainEventDraft,
    Outcome,
    PoisonPill,
    PoisonReason,
    RowMemory,
    Skip,
    SourceRecord,
    Translation,
    compiled,
    to_avro_record,
)

Headers = list[tuple[str, bytes]]


class DomainRecord(msgspec.Struct, frozen=True, gc=False):
    """One family's output of an event, before sequencing: `head + varint(sequence) + tail` is its value."""

    route: Route
    head: bytes
    tail: bytes
    dedupe_id: str
    src: str


class Routed(msgspec.Struct, frozen=True, gc=False):
    draft: DomainEventDraft
    records: tuple[DomainRecord, ...]


class DeadLetter(msgspec.Struct, frozen=True, gc=False):
    pill: PoisonPill
    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers


Processed = Routed | DeadLetter | Skip


def sequence_headers(sequence: int, src: str) -> Headers:
    """The headers of a sequenced domain record: its sequence and the source position it came from."""
    return [("seq", str(sequence).encode()), ("src", src.encode())]


class RecordPipeline:
    """Translation, routing and encoding under one catalog; built once per process (schemas parsed once).

    `wire_headers` maps each output topic to its Confluent wire header (magic byte and schema id), put in front
    of every head; without it (the backfill, whose JVM load step adds it) heads are bare Avro. `encode=False`
    (a verification that only compares keys and positions) leaves head and tail empty. `avro` reads source
    values in the Confluent wire format (their writer schemas from the registry).
    """

    def __init__(self, catalog: Catalog, service: str, service_version: str,
                 wire_headers: Mapping[str, bytes] | None = None, encode: bool = True,
                 avro: AvroValues | None = None) -> None:
        self.catalog = catalog
        self.service = service
        self.service_version = service_version
        self.encoder = SplitEncoder(load_schema("interaction_event"))
        self.wire_headers = dict(wire_headers or {})
        self.encode = encode
        self.avro = avro

    def processor(self, translation: Translation, families: tuple[str, ...],
                  rows: RowMemory | None = None) -> Callable[[SourceRecord], Processed]:
        """`process` for the records of one source, its translator and family tables looked up once; `rows`: the
        ids of the captured rows seen so far (a CDC source, `remembers_rows`)."""
        return partial(self._process, compiled(translation, self.avro, rows),
                       tuple(self.catalog.family_table(family) for family in families))

    def process(self, record: SourceRecord, translation: Translation, families: tuple[str, ...]) -> Processed:
        """One record; `translation`: the source's format or mapping (`SourceTopic.translation`). A loop over a
        source's records takes its `processor`."""
        return self.processor(translation, families)(record)

    def _process(self, translate: Callable[[SourceRecord], Outcome], tables: tuple[FamilyTable, ...],
                 record: SourceRecord) -> Processed:
        outcome = translate(record)
        if isinstance(outcome, Skip):
            return outcome
        if isinstance(outcome, PoisonPill):
            return self.dead_letter(record, outcome)
        version = self.catalog.version
        try:
            routes = [route_in(table, version, outcome.org_id, outcome.interaction_id) for table in tables]
        except ValueError as error:
            return self.dead_letter(record, PoisonPill(PoisonReason.UNROUTABLE, str(error), None))
        head, tail = self.encoder.encode_parts(to_avro_record(outcome, 0)) if self.encode else (b"", b"")
        src = outcome.source.header()
        return Routed(outcome, tuple(
            DomainRecord(target, self.wire_headers.get(target.topic, b"") + head, tail, outcome.dedupe_id, src)
            for target in routes
        ))

    def dead_letter(self, record: SourceRecord, pill: PoisonPill) -> DeadLetter:
        headers = dead_letter_headers(
            reason=str(pill.reason_code), error=pill.message, field=pill.field, source_topic=record.topic,
            source_partition=record.partition, source_offset=record.offset, service=self.service,
            service_version=self.service_version, original_headers=record.headers,
        )
        return DeadLetter(pill, self.catalog.dlq_topic, record.key, record.value, headers)

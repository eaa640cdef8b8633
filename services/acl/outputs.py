"""Everything the ACL writes: domain records (Avro, Confluent wire format), dead letters, and their metrics."""

from __future__ import annotations

from typing import Any

import faust

from services.acl.envelope import Envelope
from services.registry.client import SchemaRegistryClient
from services.registry.serde import AvroSerde
from services.streaming.metrics import DEAD_LETTERED, OUTPUT_PARTITION, PRODUCED
from services.streaming.sending import RawSender
from services.streaming.settings import StreamSettings
from shared.avro import load_schema
from shared.catalog import Catalog
from shared.deadletter import dead_letter_headers
from shared.translation import DomainEventDraft, PoisonPill, SourceRecord, to_avro_record


class OutputWriter:
    def __init__(self, app: faust.App, catalog: Catalog, settings: StreamSettings, service: str) -> None:
        self.app = app
        self.catalog = catalog
        self.service = service
        self.version = settings.service_version
        self.registry = SchemaRegistryClient(settings.registry)
        self.schema = load_schema("interaction_event")
        self.serdes: dict[str, AvroSerde] = {}
        self.sender = RawSender(app)

    def _serde(self, topic: str) -> AvroSerde:
        if topic not in self.serdes:
            subject = self.catalog.topic(topic).schema_subject
            self.serdes[topic] = AvroSerde(self.registry, subject, self.schema)
        return self.serdes[topic]

    def prepare(self) -> None:
        """Register the domain schema for every output topic now: fail at start-up, not on the first record."""
        for family in self.catalog.families.values():
            for topic in family.output_topics:
                self._serde(topic)

    @staticmethod
    def domain_record(draft: DomainEventDraft) -> dict[str, Any]:
        return to_avro_record(draft, 0)

    async def emit(self, envelope: Envelope, sequence: int) -> None:
        record = dict(envelope.record, sequence=sequence)
        await self.sender.send(
            envelope.topic,
            envelope.key.encode(),
            self._serde(envelope.topic).encode(record),
            envelope.partition,
            [("seq", str(sequence).encode()), ("src", envelope.source.encode())],
        )
        PRODUCED.labels(self.service, envelope.topic).inc()
        OUTPUT_PARTITION.labels(envelope.topic, str(envelope.partition)).inc()

    async def dead_letter(self, record: SourceRecord, pill: PoisonPill) -> None:
        headers = dead_letter_headers(
            reason=pill.reason_code,
            error=pill.message,
            field=pill.field,
            source_topic=record.topic,
            source_partition=record.partition,
            source_offset=record.offset,
            service=self.service,
            service_version=self.version,
            original_headers=record.headers,
        )
        await self.sender.send(self.catalog.dlq_topic, record.key, record.value, None, headers)
        DEAD_LETTERED.labels(self.service, pill.reason_code).inc()

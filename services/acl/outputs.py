"""Everything the ACL writes: domain records (Avro, Confluent wire format), dead letters, and their metrics."""

from __future__ import annotations

from typing import Any

import faust
from shared.avro import load_schema
from shared.translation import DomainEventDraft, PoisonPill, SourceRecord, to_avro_record

from services.acl.envelope import Envelope
from services.registry.client import SchemaRegistryClient
from services.registry.serde import AvroSerde
from services.streaming.metrics import DEAD_LETTERED, OUTPUT_PARTITION, PRODUCED
from services.streaming.settings import StreamSettings
from shared.catalog import Catalog
from shared.deadletter import dead_letter_headers

RAW: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw"}


class OutputWriter:
    def __init__(self, app: faust.App, catalog: Catalog, settings: StreamSettings, service: str) -> None:
        self.app = app
        self.catalog = catalog
        self.service = service
        self.version = settings.service_version
        self.registry = SchemaRegistryClient(settings.registry)
        self.schema = load_schema("interaction_event")
        self.serdes: dict[str, AvroSerde] = {}
        self.topics: dict[str, faust.TopicT] = {}
        self.dlq = app.topic(catalog.dlq_topic, **RAW)

    def _topic(self, name: str) -> faust.TopicT:
        if name not in self.topics:
            self.topics[name] = self.app.topic(name, **RAW)
        return self.topics[name]

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
        await self._topic(envelope.topic).send(
            key=envelope.key.encode(),
            value=self._serde(envelope.topic).encode(record),
            partition=envelope.partition,
            headers=[("seq", str(sequence).encode()), ("src", envelope.source.encode())],
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
        await self.dlq.send(key=record.key, value=record.value, headers=headers)
        DEAD_LETTERED.labels(self.service, pill.reason_code).inc()

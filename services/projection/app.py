"""The projection on the batch runtime: domain interaction events -> the org-activity topic, keyed by org_id."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from confluent_kafka import Message

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.memory import SchemaIdMemory
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.runtime.processor import Outputs, TableLookup, TableSpec
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.services.runtime.worker import Worker
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.projection import org_activity

SERVICE = "projection"


def _millis(value: Any) -> int:
    return int(value.timestamp() * 1000) if isinstance(value, datetime) else int(value)


class OrgActivityProjection:
    tables: Sequence[TableSpec] = ()

    def __init__(self, settings: RuntimeSettings, group_id: str) -> None:
        catalog = load_catalog(settings.catalog_path)
        registry = SchemaRegistryClient(settings.registry, memory=SchemaIdMemory(settings.data_dir / group_id))
        # The interaction events family (the catalog's default): one activity record per domain event.
        self.topics = catalog.family(catalog.default_family).output_topics
        self.decoders = {t: AvroSerde(registry, catalog.topic(t).schema_subject, load_schema("interaction_event"))
                         for t in self.topics}
        self.target = catalog.org_activity_topic
        self.encoder = AvroSerde(registry, catalog.topic(self.target).schema_subject, load_schema("org_activity"))
        registry.log_recalled()

    def process(self, messages: Sequence[Message], outputs: Outputs, tables: TableLookup) -> int:
        for message in messages:
            topic: str = message.topic()  # type: ignore[assignment]
            domain = self.decoders[topic].decode(message.value())  # type: ignore[arg-type]
            activity = org_activity(domain, topic, message.partition(), message.offset())  # type: ignore[arg-type]
            activity["event_time"] = _millis(activity["event_time"])
            # Keyed by org id and placed by librdkafka's murmur2_random partitioner: Java's partition for the key.
            outputs.produce(self.target, activity["org_id"].encode(), self.encoder.encode(activity))
        return len(messages)


def create_worker(settings: RuntimeSettings) -> Worker:
    group_id = settings.app_id or "rekey-projection"
    return Worker(settings, group_id, SERVICE, [OrgActivityProjection(settings, group_id)])

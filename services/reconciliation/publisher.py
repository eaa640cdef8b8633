"""Publish `ReconciliationRequired` records (Avro, Confluent wire format) on the catalog's reconciliation topic."""

from __future__ import annotations

from collections.abc import Sequence

from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.reconciliation.audit import Mismatch
from kafka_rekey.shared.reconciliation.events import SCHEMA_NAME, reconciliation_required, record_key


class PublishError(RuntimeError):
    """Some ReconciliationRequired records were not acknowledged by the broker."""


class ReconciliationPublisher:
    def __init__(self, kafka: KafkaSettings, registry: RegistrySettings, topic: str, subject: str) -> None:
        self.topic = topic
        self.serde = AvroSerde(SchemaRegistryClient(registry), subject, load_schema(SCHEMA_NAME))
        self.producer = make_producer(kafka)

    def __call__(self, mismatches: Sequence[Mismatch], repaired: set[tuple[str, str, int]],
                 detected_at: int) -> None:
        failures: list[str] = []
        for mismatch in mismatches:
            identity = (mismatch.check, mismatch.org_id, mismatch.window_start)
            record = reconciliation_required(mismatch, detected_at, identity in repaired)
            self.producer.produce(self.topic, key=record_key(mismatch), value=self.serde.encode(record),
                                  on_delivery=lambda err, _msg: failures.append(str(err)) if err else None)
        remaining = self.producer.flush(30)
        if failures or remaining:
            raise PublishError(f"publishing ReconciliationRequired to {self.topic!r}: {len(failures)} failed "
                               f"({'; '.join(failures[:3])}), {remaining} unacknowledged after 30s")

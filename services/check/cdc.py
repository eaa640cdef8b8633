"""Gather a CDC source's domain events and dead letters, and check them against the manifest of the row changes
committed to its table (`shared.checking.cdc`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.checking.cdc import CdcEvent, CdcReport, RowChange, check_cdc, read_manifest


@dataclass(frozen=True)
class CdcCheck:
    report: CdcReport
    changes: list[RowChange]
    events: list[CdcEvent]
    """Every event of the source in the family's output topics, in log order per topic."""


def source_events(config: dict[str, Any], registry: RegistrySettings, catalog: Catalog, family: str,
                  source_topic: str) -> list[CdcEvent]:
    """The events of the family's output topics that came from `source_topic` (their `src` header names it)."""
    client = SchemaRegistryClient(registry)
    schema = load_schema("interaction_event")
    prefix = f"{source_topic}/".encode()
    events = []
    for topic in catalog.family(family).output_topics:
        serde = AvroSerde(client, catalog.topic(topic).schema_subject, schema)
        for message in iter_topic(config, topic):
            if not dict(message.headers() or []).get("src", b"").startswith(prefix):
                continue
            event = serde.decode(message.value())
            source = event["source"]
            events.append(CdcEvent(topic, message.partition(), message.offset(), message.key().decode(),
                                   int(event["sequence"]), event["event_id"], event["event_type"],
                                   event["change_op"], int(event["ordering_token"]), event["payload"],
                                   event["interaction_type"], int(source["partition"]), int(source["offset"])))
    return events


def source_dead_letters(config: dict[str, Any], topic: str, source_topic: str) -> Counter[str]:
    """The dead letters of `source_topic` in the dead-letter `topic`, by reason."""
    reasons: Counter[str] = Counter()
    for message in iter_topic(config, topic):
        headers = {k: v.decode() for k, v in (message.headers() or [])}
        if headers.get("dlq.source.topic") == source_topic:
            reasons[headers.get("dlq.reason", "?")] += 1
    return reasons


def run_cdc_check(kafka: KafkaSettings, registry: RegistrySettings, catalog: Catalog, family: str, manifest: Path,
                  source_topic: str) -> CdcCheck:
    """Read the source's events in `family` and its dead letters, and check them against `manifest`."""
    config = kafka.librdkafka()
    with manifest.open() as lines:
        changes = read_manifest(lines)
    events = source_events(config, registry, catalog, family, source_topic)
    partitions = {topic: catalog.topic(topic).partitions for topic in catalog.family(family).output_topics}
    report = check_cdc(changes, events, partitions, source_dead_letters(config, catalog.dlq_topic, source_topic))
    return CdcCheck(report, changes, events)

"""Gather a family's output records, the dead letters and the manifest, and run the pure checker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.checking import CheckReport, OutputRecord, check_outputs


def manifest_expectations(manifest: Path, source_topic: str) -> tuple[set[str], set[str]]:
    """Event ids that must reach each family once, and the source positions that must be dead-lettered."""
    events: set[str] = set()
    poison: set[str] = set()
    with manifest.open() as lines:
        for line in lines:
            row = json.loads(line)
            if row["kind"] == "event":
                events.add(row["event_id"])
            elif row["kind"] == "malformed":
                poison.add(f"{source_topic}/{row['partition']}/{row['offset']}")
    return events, poison


def dead_letter_positions(config: dict[str, object], topic: str) -> set[str]:
    positions = set()
    for message in iter_topic(config, topic):
        headers = {k: v.decode() for k, v in (message.headers() or [])}
        positions.add(f"{headers['dlq.source.topic']}/{headers['dlq.source.partition']}/{headers['dlq.source.offset']}")
    return positions


def run_check(
    kafka: KafkaSettings,
    registry: RegistrySettings,
    catalog: Catalog,
    family: str,
    manifest: Path | None = None,
    source_topic: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> CheckReport:
    config = kafka.librdkafka()
    client = SchemaRegistryClient(registry)
    schema = load_schema("interaction_event")
    topics = catalog.family(family).output_topics
    records: list[OutputRecord] = []
    for topic in topics:
        serde = AvroSerde(client, catalog.topic(topic).schema_subject, schema)
        for message in iter_topic(config, topic, progress=progress):
            event = serde.decode(message.value())
            records.append(OutputRecord(topic, message.partition(), message.offset(), message.key().decode(),
                                        int(event["sequence"]), event["event_id"]))
    expected_events = expected_poison = dead_letters = None
    if manifest is not None:
        if source_topic is None:
            raise ValueError("--source is needed with --manifest: the manifest's offsets are positions in it")
        expected_events, expected_poison = manifest_expectations(manifest, source_topic)
        dead_letters = dead_letter_positions(config, catalog.dlq_topic)
    partitions = {topic: catalog.topic(topic).partitions for topic in topics}
    return check_outputs(records, partitions, expected_events, expected_poison, dead_letters)

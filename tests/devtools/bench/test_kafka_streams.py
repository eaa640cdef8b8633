"""The Kafka Streams baseline of `rekey bench acl` on the real broker and registry: it does the one-family ACL's
work (keys, dense `seq` per key, Avro in the domain schema with the wire header, each event once)."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.partitioning import key_partition
from kafka_rekey.shared.translation import DomainEventDraft, SourceFormat, SourceRecord, compiled
from kafka_rekey_dev.bench.kafka_streams.app import AT_LEAST_ONCE, EXACTLY_ONCE, AclStreamsApp
from kafka_rekey_dev.embedded.processes import terminate_with_parent
from tests.support.kafka import end_offsets, read_topic
from tests.support.waiting import wait_until

EVENTS = 1_500
OUTPUT_PARTITIONS = 8


@pytest.mark.parametrize("guarantee", [AT_LEAST_ONCE, EXACTLY_ONCE])
def test_the_app_keys_sequences_and_encodes_every_event_once(
        guarantee: str, kafka_bootstrap: str, schema_registry_url: str, topic_factory: Callable[..., str],
        tmp_path: Path) -> None:
    source = topic_factory(partitions=6, prefix="src")
    output = topic_factory(partitions=OUTPUT_PARTITIONS, prefix="out")
    generate_to_topic(kafka_bootstrap, source, EVENTS, 12, duplicate_rate=0.05, malformed_rate=0.02, seed=7)
    expected: dict[str, DomainEventDraft] = {}
    positions: dict[str, set[str]] = defaultdict(set)  # an upstream duplicate's: whichever comes first is kept
    translate = compiled(SourceFormat.CCAAS_JSON)
    for record in read_topic(kafka_bootstrap, source):
        outcome = translate(SourceRecord(record.topic, record.partition, record.offset, record.key, record.value))
        if isinstance(outcome, DomainEventDraft):
            expected[outcome.event_id] = outcome
            positions[outcome.event_id].add(outcome.source.header())
    app = AclStreamsApp(kafka_bootstrap, source, output, f"bench-streams-{output}", tmp_path / "state",
                        tmp_path / "first-consume", guarantee)
    log = tmp_path / "app.log"
    with log.open("wb") as out:
        process = subprocess.Popen(app.command(schema_registry_url), stdout=out, stderr=subprocess.STDOUT,
                                   preexec_fn=terminate_with_parent)
    try:
        wait_until(lambda: process.poll() is not None or sum(end_offsets(kafka_bootstrap, output).values())
                   >= len(expected), 90, f"{len(expected)} outputs")
        assert process.poll() is None, log.read_text()[-3000:]
        assert float(app.stamp.read_text()) > 0
    finally:
        process.terminate()
        process.wait(60)
    assert "skipped " + source in log.read_text()  # the malformed records, each named with its position

    outputs = read_topic(kafka_bootstrap, output)
    serde = AvroSerde(SchemaRegistryClient(RegistrySettings(url=schema_registry_url)), f"{output}-value",
                      load_schema("interaction_event"))
    by_key: dict[bytes, list[int]] = defaultdict(list)
    events = []
    for record in outputs:
        event = serde.decode(record.value or b"")
        draft = expected[event["event_id"]]
        key = f"{draft.org_id}:{draft.interaction_id}".encode()
        assert record.key == key
        assert record.partition == key_partition(key, OUTPUT_PARTITIONS)
        assert int(record.headers["seq"]) == event["sequence"]
        assert record.headers["src"].decode() in positions[draft.event_id]
        event_time_ms = round(event["event_time"].timestamp() * 1000)  # decoded as its logical type, a datetime
        assert (event["event_type"], event_time_ms) == (draft.event_type, draft.event_time_ms)
        by_key[key].append(event["sequence"])
        events.append(event["event_id"])
    assert sorted(events) == sorted(expected)
    for key, sequences in by_key.items():
        assert sequences == list(range(1, len(sequences) + 1)), key

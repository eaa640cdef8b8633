"""Domain events for sink and reconciliation tests: generate, produce (Avro via the registry), drain a sink."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.services.sink.databases import open_store
from kafka_rekey.services.sink.service import Sink, domain_decoder
from kafka_rekey.services.sink.settings import SinkOptions, SinkSettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.sink.events import SinkEvent, event_from_record
from tests.fixtures.kafka import FAST_GROUP_CONFIG
from tests.support.kafka import end_offsets
from tests.support.waiting import wait_until

BASE_TIME = 1_714_550_400_000  # 2024-05-01T08:00:00Z
EVENT_TYPES = ("start", "answer", "hold", "transfer", "answer", "wrap", "note", "end")


def interaction_events(orgs: int = 3, interactions: int = 8, per_interaction: int = 6,
                       base_time: int = BASE_TIME, step_ms: int = 7_000) -> list[tuple[str, dict[str, Any]]]:
    """(key, InteractionEvent record) in clean per-key order; key `org:interaction`, sequence dense per key."""
    events = []
    for o in range(orgs):
        for i in range(interactions):
            org, interaction = f"org-{o}", f"int-{o}-{i}"
            for s in range(1, per_interaction + 1):
                events.append((f"{org}:{interaction}", domain_record(
                    org, interaction, s, base_time + (o * 97 + i * 13) * 1000 + s * step_ms)))
    return events


def domain_record(org: str, interaction: str, sequence: int, event_time: int,
                  event_type: str | None = None) -> dict[str, Any]:
    return {
        "org_id": org, "interaction_id": interaction, "event_id": f"{interaction}-e{sequence}",
        "event_type": event_type or EVENT_TYPES[(sequence - 1) % len(EVENT_TYPES)], "interaction_type": "call",
        "event_time": event_time, "sequence": sequence,
        "source": {"topic": "genesys.raw", "partition": sequence % 3, "offset": sequence * 11},
        "ordering_token": event_time, "change_op": None,
        "payload": f'{{"agentId":"a{sequence % 4}","interactionId":"{interaction}"}}',
    }


def shuffled_with_duplicates(events: Sequence[tuple[str, dict[str, Any]]], seed: int = 11,
                             duplicate_share: float = 0.3) -> list[tuple[str, dict[str, Any]]]:
    """Each key's events in a random order, some repeated; keys interleaved at random."""
    rng = random.Random(seed)
    by_key: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for item in events:
        by_key.setdefault(item[0], []).append(item)
    for items in by_key.values():
        items.extend(rng.sample(items, max(1, int(len(items) * duplicate_share))))
        rng.shuffle(items)
    queues = list(by_key.values())
    mixed = []
    while queues:
        queue = rng.choice(queues)
        mixed.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    return mixed


def sink_events(events: Iterable[tuple[str, dict[str, Any]]]) -> list[SinkEvent]:
    return [event_from_record(record, key) for key, record in events]


def produce(bootstrap: str, registry_url: str, topic: str, events: Iterable[tuple[str, dict[str, Any]]],
            raw: Iterable[tuple[bytes | None, bytes | None]] = ()) -> None:
    """Produce Avro InteractionEvents (subject `<topic>-value`), then any `raw` (key, value) records."""
    serde = AvroSerde(SchemaRegistryClient(RegistrySettings(url=registry_url)), f"{topic}-value",
                      load_schema("interaction_event"))
    producer = make_producer(KafkaSettings(bootstrap_servers=bootstrap))
    failures: list[str] = []

    def report(error: Any, _message: Any) -> None:
        if error:
            failures.append(str(error))

    for key, record in events:
        producer.produce(topic, key=key.encode(), value=serde.encode(record), on_delivery=report)
    for key_bytes, value in raw:
        producer.produce(topic, key=key_bytes, value=value, on_delivery=report)
    assert producer.flush(60) == 0 and failures == [], failures


def settings_for(bootstrap: str, registry_url: str, topic: str, database_url: str, **sink: Any) -> SinkSettings:
    options = {"topic": topic, "subject": f"{topic}-value", "database_url": database_url,
               "group_id": f"sink-{uuid.uuid4().hex[:8]}", "batch_timeout_s": 0.2, **sink}
    return SinkSettings(kafka=KafkaSettings(bootstrap_servers=bootstrap), registry=RegistrySettings(url=registry_url),
                        sink=SinkOptions(**options))


def make_sink(settings: SinkSettings) -> Sink:
    return Sink(settings, open_store(settings.database_url, settings.sink.table), domain_decoder(settings),
                consumer_overrides=FAST_GROUP_CONFIG)


_COORDINATOR_MOVING = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE}


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets for `topic` (partitions without a commit are left out), asked by a
    consumer that does not join the group; retried while the group coordinator is still settling."""
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})

    def ask() -> list[TopicPartition]:
        """The committed positions (one per partition), or [] while the coordinator is moving."""
        partitions = probe.list_topics(topic, timeout=10).topics[topic].partitions
        try:
            return list(probe.committed([TopicPartition(topic, p) for p in partitions], timeout=30))
        except KafkaException as error:
            if error.args[0].code() in _COORDINATOR_MOVING:
                return []
            raise

    try:
        committed = wait_until(ask, 30, f"committed offsets of group {group}", interval=0.5)
    finally:
        probe.close()
    return {tp.partition: tp.offset for tp in committed if tp.offset >= 0}


def drain(sink: Sink, bootstrap: str, timeout: float = 60.0) -> None:
    """Step the sink until its group has committed every partition of its topic to the end."""
    ends = {p: end for p, end in end_offsets(bootstrap, sink.topic).items() if end > 0}

    def done() -> bool:
        sink.step()
        return committed_offsets(bootstrap, sink.options.consumer_group, sink.topic) == ends

    wait_until(done, timeout, f"sink of {sink.topic} committed up to {ends}", interval=0.0)


def snapshot(dsn: str, table: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the state table, its history and corrections, sorted (for equality checks)."""
    with psycopg.connect(dsn) as conn:
        return {
            suffix: sorted(conn.execute(f'SELECT * FROM "{table}{suffix}"').fetchall())
            for suffix in ("", "_events", "_corrections")
        }

"""The live ACL and the Spark backfill write the same domain records for the same input: key, partition, `seq`
and `src` headers and Avro body, and the same dead letters.

Both run on one generated source (malformed records, upstream duplicates, hot tenants) into two copies of the
catalog that differ only in their output topics. The source is one partition and has no late events: per key the
live service numbers in arrival order and the backfill in event-time order (then source position), and the two
orders are the same only when arrival follows event time.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.kafka.topics import create_topics
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.generation import GenerationConfig, generate
from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.fixtures.catalog import isolate_catalog_text, unique_name
from tests.support.kafka import Record, read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.broker]

FAMILY = "interaction_events"
EVENTS = 3000
WIRE_HEADER = 5  # magic byte + schema id: the two copies' subjects have their own ids


def _copy_with_other_outputs(path: Path, catalog: Catalog, admin: AdminClient, tmp_path: Path) -> Path:
    """The catalog at `path` with every topic renamed again except the sources."""
    uid = uuid.uuid4().hex[:8]
    text = isolate_catalog_text(path.read_text(), uid)
    sources = {source.name for source in catalog.sources}
    for source in sources:
        text = text.replace(unique_name(source, uid), source)
    copy = tmp_path / f"catalog-backfill-{uid}.yaml"
    copy.write_text(text)
    names = [spec.name for spec in load_catalog(copy).provisioned_topics() if spec.name not in sources]
    create_topics(admin, [spec for spec in load_catalog(copy).provisioned_topics() if spec.name in names])
    wait_until(lambda: set(names) <= set(admin.list_topics(timeout=10).topics), 60, "the copy's topics exist")
    return copy


def _send_to_one_partition(bootstrap: str, topic: str) -> int:
    config = GenerationConfig(events=EVENTS, orgs=12, hot_orgs=("org-acme",), malformed_rate=0.02,
                              duplicate_rate=0.03, late_rate=0.0, seed=11)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    sent = 0
    for record in generate(config):
        producer.produce(topic, key=record.key, value=record.value, partition=0)
        sent += 1
    assert producer.flush(60) == 0
    return sent


def _domain_records(bootstrap: str, topics: list[str]) -> Counter[tuple[int, bytes | None, bytes, bytes, bytes]]:
    """(partition, key, seq, src, Avro body) of every record, topics told apart by their position in `topics`."""
    found: Counter[tuple[int, bytes | None, bytes, bytes, bytes]] = Counter()
    for index, topic in enumerate(topics):
        for record in read_topic(bootstrap, topic):
            assert record.value is not None and record.value[0] == 0, (topic, record.offset)
            found[(index * 1000 + record.partition, record.key, record.headers["seq"], record.headers["src"],
                   record.value[WIRE_HEADER:])] += 1
    return found


def _dead_letters(records: list[Record]) -> Counter[tuple[bytes | None, bytes | None, bytes, bytes, bytes]]:
    return Counter((r.key, r.value, r.headers["dlq.reason"], r.headers["dlq.field"], r.headers["dlq.source.offset"])
                   for r in records)


def test_live_acl_writes_what_the_backfill_writes(
    spark, provisioned_catalog: tuple[Path, Catalog], kafka_admin: AdminClient,  # type: ignore[no-untyped-def]
    kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    live_path, live_catalog = provisioned_catalog
    backfill_path = _copy_with_other_outputs(live_path, live_catalog, kafka_admin, tmp_path)
    backfill_catalog = load_catalog(backfill_path)
    source = next(s.name for s in live_catalog.sources if s.format == "ccaas-json")
    sent = _send_to_one_partition(kafka_bootstrap, source)

    report = run_backfill(spark, BackfillRequest([source], FAMILY, backfill_path),
                          KafkaSettings(bootstrap_servers=kafka_bootstrap), RegistrySettings(url=schema_registry_url))
    assert report.read == sent
    poisoned = sum(report.dead_lettered.values())
    assert report.written > EVENTS // 2 and poisoned > 0 and report.duplicates_dropped > 0

    live_outputs = list(live_catalog.family(FAMILY).output_topics)
    env = acl_env(kafka_bootstrap, schema_registry_url, live_path, tmp_path / "state")

    def live_done() -> bool:
        written = sum(len(read_topic(kafka_bootstrap, topic, timeout=5)) for topic in live_outputs)
        return written >= report.written and len(read_topic(kafka_bootstrap, live_catalog.dlq_topic,
                                                            timeout=5)) >= poisoned

    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        wait_until(live_done, 240, f"{report.written} domain records and {poisoned} dead letters from the live ACL",
                   interval=2.0)
    finally:
        acl.stop()

    live = _domain_records(kafka_bootstrap, live_outputs)
    backfilled = _domain_records(kafka_bootstrap, list(backfill_catalog.family(FAMILY).output_topics))
    assert sum(backfilled.values()) == report.written
    assert live == backfilled, (sorted(live - backfilled)[:3], sorted(backfilled - live)[:3])
    assert _dead_letters(read_topic(kafka_bootstrap, live_catalog.dlq_topic)) == _dead_letters(
        read_topic(kafka_bootstrap, backfill_catalog.dlq_topic))

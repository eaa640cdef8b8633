"""Backfill of generated history into the family's versioned topics on a real broker and registry: a run killed
in its write stage, re-run, completes without duplicates; then `verify`: it passes on the result, and fails
naming the key when one record is removed or duplicated. One history serves both: the re-run is the backfill
the verification checks."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_rekey.services import handoff
from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.generation import generate_to_topic
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.services.topics.apply import apply_catalog
from kafka_rekey.shared.handoff import sequence_key
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
from kafka_rekey.spark_backfill.jobs.verify import VerifyRequest, run_verify
from kafka_rekey_dev.chaos.backfill import WRITE_PARTITIONS, committed_tasks, start_backfill, wait_first_commit
from kafka_rekey_dev.chaos.harness import ChaosEnv
from tests.support.kafka import read_topic

pytestmark = [pytest.mark.spark, pytest.mark.broker]

EVENTS = 20_000  # 16 write tasks on 2 cores: several are still to run when the first commits


@pytest.fixture
def history(catalog_factory, kafka_bootstrap: str) -> tuple[Path, str]:  # type: ignore[no-untyped-def]
    """An isolated catalog with every topic created, and generated source history in its genesys source."""
    path = catalog_factory()
    catalog = load_catalog(path)
    apply_catalog(catalog, {"bootstrap.servers": kafka_bootstrap})
    source = next(s.name for s in catalog.sources if s.format == "ccaas-json")
    generate_to_topic(kafka_bootstrap, source, EVENTS, 12, hot_orgs=("org-acme", "org-initech"),
                      malformed_rate=0.01, duplicate_rate=0.03, late_rate=0.05, seed=11)
    return path, source


def _backfill(spark, path: Path, source: str, kafka: KafkaSettings, registry: RegistrySettings):  # type: ignore[no-untyped-def]
    catalog = load_catalog(path)
    return run_backfill(spark, BackfillRequest([source], catalog.default_family, path), kafka, registry)


def _verify(spark, path: Path, source: str, kafka: KafkaSettings, registry: RegistrySettings):  # type: ignore[no-untyped-def]
    catalog = load_catalog(path)
    request = VerifyRequest([source], [], catalog.default_family, path, window_ms=3_600_000)
    return run_verify(spark, request, kafka, registry)


def test_a_killed_run_re_run_then_verify_detects_a_removed_and_a_duplicated_record(  # type: ignore[no-untyped-def]
        spark, history, kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path) -> None:
    """`rekey backfill` killed whole (driver, JVM, Python workers) after a first write task committed, while
    others hold open transactions; the re-run fences them, skips the committed tasks and writes only the rest,
    and the result is what one run writes: `verify` passes on it and names the keys once it is tampered with."""
    path, source = history
    kafka, registry = KafkaSettings(bootstrap_servers=kafka_bootstrap), RegistrySettings(url=schema_registry_url)
    catalog = load_catalog(path)
    family = catalog.family(catalog.default_family)

    env = ChaosEnv(kafka_bootstrap, schema_registry_url, path, catalog, tmp_path)
    process = start_backfill(env, source, family.name, "local[2]", tmp_path / "report.json", tmp_path / "backfill.log")
    try:
        committed = wait_first_commit(env, source, family.name, process)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
    run_id, tasks = committed_tasks(env, source, family.name)
    assert run_id is not None and len(tasks) >= len(committed) > 0 and len(tasks) < WRITE_PARTITIONS

    report = _backfill(spark, path, source, kafka, registry)
    assert report.resumed_from == handoff.STARTED and report.run_id == run_id
    assert report.already_written == sum(int(t["written"]) for t in tasks.values()) > 0  # type: ignore[call-overload]
    assert report.read == EVENTS
    assert report.written + report.already_written == report.events - report.duplicates_dropped
    assert report.written > 0 and report.duplicates_dropped > 0 and sum(report.dead_lettered.values()) > 0

    # Every record: Java-parity partition, dense per-key sequence, seq/src headers; DLQ and hand-off written.
    sequences: dict[str, list[int]] = {}
    for topic in family.output_topics:
        partitions = catalog.topic(topic).partitions
        for record in read_topic(kafka_bootstrap, topic):
            key = record.key.decode()  # type: ignore[union-attr]
            assert record.partition == partition_for(key, partitions)
            assert set(record.headers) == {"seq", "src"}
            assert record.headers["src"].decode().startswith(f"{source}/")
            sequences.setdefault(sequence_key(topic, key), []).append(int(record.headers["seq"]))
    assert sum(len(s) for s in sequences.values()) == report.written + report.already_written
    assert all(sorted(s) == list(range(1, len(s) + 1)) for s in sequences.values())
    dead = read_topic(kafka_bootstrap, catalog.dlq_topic)
    assert len(dead) == sum(report.dead_lettered.values())
    assert all(dict(r.headers)["dlq.source.topic"] == source.encode() for r in dead)
    state = handoff.read_handoff(kafka.librdkafka(), catalog.checkpoint_topic)
    assert state.handoff.last_sequences == {k: len(s) for k, s in sequences.items()}
    ends = {p: hi for p, hi in report.snapshot[0]["end"].items()}
    assert state.handoff.source_offsets == {(source, int(p)): o for p, o in ends.items()}
    assert state.run(source, family.name).state == handoff.COMPLETE  # type: ignore[union-attr]

    assert _verify(spark, path, source, kafka, registry).ok
    with pytest.raises(ValueError, match="completed"):
        _backfill(spark, path, source, kafka, registry)

    # Tamper: remove one record (the first of the busiest low-tier partition: Kafka deletes a prefix) and
    # duplicate one record of another key (same key, value, headers, partition: what a blind re-send does).
    low = family.tiers.low
    records = read_topic(kafka_bootstrap, low)
    # The first record of a partition whose key has more records: removing it leaves the key starting at 2.
    firsts = {r.partition: r for r in reversed(records)}
    per_key = Counter(r.key for r in records)
    victim = max(firsts.values(), key=lambda r: per_key[r.key])
    assert per_key[victim.key] > 1
    busiest = victim.partition
    cut = TopicPartition(low, busiest, victim.offset + 1)
    with AdminClient({"bootstrap.servers": kafka_bootstrap}) as admin:
        admin.delete_records([cut])[cut].result(30)
    other = next(r for r in records if r.partition != busiest and r.key != victim.key)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(low, key=other.key, value=other.value, partition=other.partition,
                     headers=list(other.headers.items()))
    assert producer.flush(30) == 0

    tampered = _verify(spark, path, source, kafka, registry)
    assert not tampered.ok and tampered.duplicates == 1
    removed_key, duplicated_key = victim.key.decode(), other.key.decode()  # type: ignore[union-attr]
    assert {f"{low}/{removed_key}", f"{low}/{duplicated_key}"} <= set(tampered.keys_named)
    assert any(d["problem"] == "missing" and d["key"] == removed_key for d in tampered.record_differences)
    assert any(d["problem"] == "duplicated" and d["key"] == duplicated_key for d in tampered.record_differences)
    by_key = {p["key"]: p["problems"] for p in tampered.key_problems}
    assert any("duplicate sequence" in text for text in by_key[duplicated_key])
    assert any("starts at" in text or "gap" in text for text in by_key[removed_key])
    assert tampered.window_mismatches

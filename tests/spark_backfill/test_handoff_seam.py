"""v1 history -> v2 backfill, then live traffic through the live ACL service started from the hand-off, its worker
killed (kill -9) right after the hand-off while the first live records are in flight (fault scenario 6): every
key has one dense sequence across the seam, every record is on its Java-parity partition, nothing of the history
is re-processed, and `rekey verify --allow-redeliveries` passes on the result, counting the worker's re-sent
records. The seam without a kill, where no record may come twice, is proven on the cluster's backfill
(tests/spark_backfill/test_cluster.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_rekey.services.generation import generate_to_topic
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.handoff import sequence_key
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
from kafka_rekey.spark_backfill.jobs.verify import VerifyRequest, run_verify
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.kafka import read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.broker]

FAMILY = "interaction_events"
FIRST_LIVE = 100


def _live_events(history: list[dict[str, object]], count: int) -> list[bytes]:
    """New events: half continue interactions of the history (same org and interaction, later times), half
    start new interactions."""
    events = []
    for i in range(count):
        base = history[i % len(history)]
        interaction = base["interactionId"] if i % 2 == 0 else f"live-{i}"
        events.append(json.dumps({
            "orgId": base["orgId"], "interactionId": interaction, "eventId": f"live-{uuid.uuid4()}",
            "eventType": "answer", "interactionType": "call", "timestamp": "2031-01-01T00:00:00Z",
            "data": {"agentId": f"agent-{i}"},
        }).encode())
    return events


def test_backfill_then_live_acl_killed_after_the_handoff_continue_every_key_densely(  # type: ignore[no-untyped-def]
    spark, provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    path, catalog = provisioned_catalog
    source = next(s.name for s in catalog.sources if s.format == "ccaas-json")
    kafka, registry = KafkaSettings(bootstrap_servers=kafka_bootstrap), RegistrySettings(url=schema_registry_url)
    generate_to_topic(kafka_bootstrap, source, 2000, 10, hot_orgs=("org-acme", "org-initech"),
                      malformed_rate=0.01, duplicate_rate=0.02, seed=5)
    report = run_backfill(spark, BackfillRequest([source], FAMILY, path), kafka, registry)
    snapshot_end = {int(p): o for p, o in report.snapshot[0]["end"].items()}

    history = []
    for record in read_topic(kafka_bootstrap, source)[:400]:
        try:
            event = json.loads(record.value or b"")
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("orgId"), str) and isinstance(
                event.get("interactionId"), str) and event["orgId"] and event["interactionId"]:
            history.append(event)
    live = _live_events(history, 1500)

    def send_live(start: int, end: int) -> None:
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})
        for i, value in enumerate(live[start:end], start=start):
            producer.produce(source, key=f"random-{i}".encode(), value=value)
        assert producer.flush(30) == 0

    env = acl_env(kafka_bootstrap, schema_registry_url, path, tmp_path / "state")
    outputs = catalog.family(FAMILY).output_topics
    expected_total = report.written + len(live)
    # The first live records arrive once the worker runs; it is killed as soon as it has produced some of them,
    # and the rest arrive after the kill: a batch runtime takes a small backlog in one go, so the kill could not
    # otherwise land between the first live record and the last.
    acl = ServiceProcess("acl", env, tmp_path, name="acl-killed").start()
    try:
        send_live(0, FIRST_LIVE)
        produced = wait_until(lambda: acl.metric("rekey_produced_total", service="acl"), 120,
                              "the live worker produced its first records", interval=0.05)
        acl.kill()
    finally:
        acl.stop()
    send_live(FIRST_LIVE, len(live))
    assert produced < len(live), f"the kill landed after all {len(live)} live records were produced"

    def drained() -> bool:
        return len({r.headers["src"] for t in outputs for r in read_topic(kafka_bootstrap, t)}) >= expected_total

    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        wait_until(drained, 240, f"{expected_total} source records in {outputs}", interval=2.0)
    finally:
        acl.stop()

    numbered: dict[tuple[str, int], str] = {}
    live_positions = set()
    copies = 0
    for topic in outputs:
        partitions = catalog.topic(topic).partitions
        for record in read_topic(kafka_bootstrap, topic):
            key = record.key.decode()  # type: ignore[union-attr]
            assert record.partition == partition_for(key, partitions), (topic, key)
            source_position = record.headers["src"].decode()
            first = numbered.setdefault((sequence_key(topic, key), int(record.headers["seq"])), source_position)
            assert first == source_position, f"{key} numbered two events the same: {first}, {source_position}"
            copies += 1
            position = SourcePosition.parse(source_position)
            if position.offset >= snapshot_end[position.partition]:
                live_positions.add(position)
    assert len(numbered) == expected_total
    assert len(live_positions) == len(live)  # the live service read exactly what the backfill did not
    sequences: dict[str, list[int]] = {}
    for key, number in numbered:
        sequences.setdefault(key, []).append(number)
    for key, numbers in sequences.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), key
    continued = [k for k, n in sequences.items() if max(n) > 1 and any(
        k.endswith(f":{e['interactionId']}") for e in history[:100])]
    assert continued, "some keys of the history must have continued across the seam"

    result = run_verify(spark, VerifyRequest([source], [], FAMILY, path, allow_redeliveries=True), kafka, registry)
    assert result.ok, (result.window_mismatches[:3], result.key_problems[:3], result.record_differences[:3])
    assert result.redeliveries == copies - expected_total

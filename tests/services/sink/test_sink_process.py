"""`rekey run sink` as a real process: killed with SIGKILL mid-stream and restarted, it loses nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
import pytest

from kafka_rekey.shared.sink.state import derive_state
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.domain import committed_offsets, interaction_events, produce, sink_events
from tests.support.kafka import end_offsets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.postgres]


def _count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        try:
            row = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()
        except psycopg.errors.UndefinedTable:
            return 0
    return int(row[0]) if row else 0


def test_kill_mid_stream_and_restart_loses_nothing(
        kafka_bootstrap: str, schema_registry_url: str, topic_factory: Callable[..., str],
        postgres_test_dsn: str, tmp_path: Path) -> None:
    topic = topic_factory(partitions=4)
    events = interaction_events(orgs=5, interactions=60, per_interaction=10)
    produce(kafka_bootstrap, schema_registry_url, topic, events)
    group = f"sink-{uuid.uuid4().hex[:8]}"
    env = {
        "REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REKEY_REGISTRY_URL": schema_registry_url,
        "REKEY_SINK_TOPIC": topic, "REKEY_SINK_SUBJECT": f"{topic}-value", "REKEY_SINK_GROUP_ID": group,
        "REKEY_SINK_DATABASE_URL": postgres_test_dsn, "REKEY_SINK_BATCH_SIZE": "10",
        "REKEY_SINK_REORDER_ENABLED": "true", "REKEY_SINK_SESSION_TIMEOUT_MS": "6000",
    }
    sink = ServiceProcess("sink", env, tmp_path).start()
    try:
        assert httpx.get(f"http://127.0.0.1:{sink.port}/healthz", timeout=5).status_code == 200
        wait_until(lambda: 0 < _count(postgres_test_dsn, "interactions_events") < len(events) // 2, 60,
                   "the sink part-way through the topic", interval=0.02)
        sink.kill()
    finally:
        sink.stop()
    applied_at_kill = _count(postgres_test_dsn, "interactions_events")
    assert applied_at_kill < len(events)
    committed = committed_offsets(kafka_bootstrap, group, topic)
    assert sum(committed.values()) <= applied_at_kill  # every committed offset is in the database

    restarted = ServiceProcess("sink", env, tmp_path, name="sink-restarted").start()
    try:
        ends = end_offsets(kafka_bootstrap, topic)
        wait_until(lambda: committed_offsets(kafka_bootstrap, group, topic) == ends, 90,
                   "the restarted sink committed the whole topic")
        caught_up = [f'rekey_consumer_lag{{partition="{p}",service="sink",topic="{topic}"}} 0.0' for p in ends]
        wait_until(lambda: all(line in restarted.metrics().splitlines() for line in caught_up), 30,
                   "the sink's /metrics showing a lag of 0 on every partition")
        metrics = restarted.metrics()
        consumed = restarted.metric("rekey_consumed_total", service="sink", topic=topic)
    finally:
        restarted.stop()
    assert "rekey_sink_applied_total" in metrics and "rekey_sink_batch_seconds_bucket" in metrics
    assert "process_resident_memory_bytes" in metrics  # the dashboard's memory panel
    assert 0 < consumed <= sum(ends.values()) - sum(committed.values())  # what the restarted sink read
    expected = derive_state(sink_events(events))
    with psycopg.connect(postgres_test_dsn) as conn:
        history = conn.execute('SELECT output_key, sequence FROM "interactions_events"').fetchall()
        rows = conn.execute('SELECT org_id, interaction_id, sequence, event_count FROM "interactions"').fetchall()
    assert sorted(history) == sorted((key, record["sequence"]) for key, record in events)
    assert sorted(rows) == sorted((o, i, r.latest.sequence, r.event_count) for (o, i), r in expected.items())

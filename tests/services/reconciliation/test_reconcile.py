"""`rekey reconcile` against the real broker, registry and PostgreSQL: a consistent pipeline passes, a
corrupted sink is detected (ReconciliationRequired published) and repaired by the rewind, and a source record
missing from the domain topic stays an unrepaired mismatch."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from confluent_kafka.admin import AdminClient
from typer.testing import CliRunner

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.cli.main import app
from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.routing import route
from kafka_rekey.shared.translation import DomainEventDraft, SourceRecord, to_avro_record, translate
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.domain import BASE_TIME, drain, make_sink, produce, settings_for, snapshot
from tests.support.kafka import create_topic, read_topic
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.postgres]
FAMILY = "interaction_events"


def _genesys(o: int, i: int, n: int) -> dict[str, Any]:
    org, interaction = f"org-{o}", f"call-{o}-{i}"
    when = datetime.fromtimestamp((BASE_TIME + ((o * 17 + i * 29) % 90 + n) * 60_000) / 1000, UTC)
    return {"orgId": org, "interactionId": interaction, "eventId": f"{interaction}-{n}", "interactionType": "call",
            "eventType": ["start", "answer", "transfer", "end"][n % 4], "timestamp": when.isoformat(),
            "data": {"agentId": f"agent-{n}"}}


def _produce_source(bootstrap: str, topic: str, events: list[dict[str, Any]]) -> None:
    producer = make_producer(KafkaSettings(bootstrap_servers=bootstrap))
    for event in events:
        producer.produce(topic, key=event["eventId"].encode(), value=json.dumps(event).encode())
    assert producer.flush(30) == 0


Published = list[tuple[str, dict[str, Any]]]


def _translate_like_the_acl(bootstrap: str, catalog_path: Path, source: str) -> tuple[str, Published]:
    """What the ACL would publish on the family's low-tier topic: translated, routed, sequenced per key."""
    catalog = load_catalog(catalog_path)
    sequences: Counter[str] = Counter()
    published: Published = []
    topics = set()
    for record in read_topic(bootstrap, source):
        draft = translate(SourceRecord(source, record.partition, record.offset, record.key, record.value),
                          "ccaas-json")
        assert isinstance(draft, DomainEventDraft)
        target = route(catalog, FAMILY, draft.org_id, draft.interaction_id)
        topics.add(target.topic)
        sequences[target.key] += 1
        published.append((target.key, to_avro_record(draft, sequences[target.key])))
    (topic,) = topics
    return topic, published


def test_corrupted_sink_is_detected_published_and_repaired(
        kafka_bootstrap: str, kafka_admin: AdminClient, schema_registry_url: str,
        catalog_factory: Callable[..., Path], postgres_test_dsn: str, tmp_path: Path) -> None:
    catalog_path = catalog_factory()
    catalog = load_catalog(catalog_path)
    source = catalog.sources[0].name
    reconciliation_topic = catalog.reconciliation_topic
    create_topic(kafka_admin, source, 3)
    create_topic(kafka_admin, reconciliation_topic, 1)
    _produce_source(kafka_bootstrap, source, [_genesys(o, i, n)
                                              for o in range(3) for i in range(5) for n in range(4)])
    domain, published = _translate_like_the_acl(kafka_bootstrap, catalog_path, source)
    create_topic(kafka_admin, domain, 3)
    produce(kafka_bootstrap, schema_registry_url, domain, published)
    sink = make_sink(settings_for(kafka_bootstrap, schema_registry_url, domain, postgres_test_dsn,
                                  watermark_delta_s=86_400))
    drain(sink, kafka_bootstrap)
    sink.close()
    consistent = snapshot(postgres_test_dsn, "interactions")
    assert consistent["_corrections"] == [] and len(consistent["_events"]) == 60

    env = {"REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REKEY_REGISTRY_URL": schema_registry_url,
           "REKEY_CATALOG_PATH": str(catalog_path), "REKEY_SINK_SUBJECT": f"{domain}-value",
           "COLUMNS": "200"}
    args = ["reconcile", "--topic", domain, "--database-url", postgres_test_dsn, "--source-topic", source]
    runner = CliRunner()
    clean = runner.invoke(app, args, env=env)
    assert clean.exit_code == 0, clean.output
    assert "consistent" in clean.output

    with psycopg.connect(postgres_test_dsn, autocommit=True) as conn:
        conn.execute("UPDATE interactions_events SET event_type = 'tampered' "
                     "WHERE org_id = 'org-0' AND interaction_id = 'call-0-1' AND sequence = 2")
        conn.execute("DELETE FROM interactions_events WHERE org_id = 'org-1' AND interaction_id = 'call-1-3' "
                     "AND sequence = 1")
        conn.execute("UPDATE interactions SET event_count = 99, sequence = 42 "
                     "WHERE org_id = 'org-2' AND interaction_id = 'call-2-0'")

    found = runner.invoke(app, args, env=env)
    assert found.exit_code == 3, found.output
    assert "MISMATCH" in found.output and "--repair" in found.output
    requests = _reconciliation_requests(kafka_bootstrap, schema_registry_url, reconciliation_topic, catalog_path)
    assert {(r["check"], r["org_id"]) for r in requests} >= {
        ("domain_vs_sink", "org-0"), ("domain_vs_sink", "org-1"), ("history_vs_table", "org-2")}
    assert not any(r["repaired"] for r in requests)
    assert all(r["window_end"] - r["window_start"] == 3_600_000 for r in requests)

    repaired = runner.invoke(app, [*args, "--repair"], env=env)
    assert repaired.exit_code == 0, repaired.output
    assert "repaired" in repaired.output
    assert snapshot(postgres_test_dsn, "interactions") == consistent
    after = _reconciliation_requests(kafka_bootstrap, schema_registry_url, reconciliation_topic, catalog_path)
    assert [r["repaired"] for r in after[len(requests):]] == [True] * (len(after) - len(requests))
    assert {r["request_id"] for r in after[len(requests):]} == {r["request_id"] for r in requests}

    # The same audit as a service (`rekey run reconciler`): consistent now, and it says so in its metrics.
    service = ServiceProcess("reconciler", {
        **env, "REKEY_SINK_TOPIC": domain, "REKEY_SINK_DATABASE_URL": postgres_test_dsn,
        "REKEY_RECONCILE_SOURCE_TOPIC": source, "REKEY_RECONCILE_SETTLE_S": "0", "REKEY_RECONCILE_INTERVAL_S": "1",
    }, tmp_path).start()
    try:
        wait_until(lambda: "rekey_reconciliation_runs_total{table=\"interactions\"} 2.0" in service.metrics(), 60,
                   "two audits by the reconciler service")
        assert 'rekey_reconciliation_unrepaired_windows{check="domain_vs_sink",table="interactions"} 0.0' in (
            service.metrics())
    finally:
        service.stop()

    # A source event the domain topic never got: found, and not something a sink rewind can repair.
    _produce_source(kafka_bootstrap, source, [_genesys(0, 9, 1)])
    unrepairable = runner.invoke(app, [*args, "--repair", "--no-emit"], env=env)
    assert unrepairable.exit_code == 3, unrepairable.output
    assert "source_vs_domain" in unrepairable.output and "still mismatching" in unrepairable.output


def _reconciliation_requests(bootstrap: str, registry_url: str, topic: str,
                             catalog_path: Path) -> list[dict[str, Any]]:
    subject = load_catalog(catalog_path).topic(topic).schema_subject
    serde = AvroSerde(SchemaRegistryClient(RegistrySettings(url=registry_url)), subject,
                      load_schema("reconciliation_required"))
    requests = []
    for record in read_topic(bootstrap, topic):
        assert record.value is not None
        decoded = serde.decode(record.value)
        assert record.key == decoded["org_id"].encode()
        requests.append({**decoded, "window_start": _millis(decoded["window_start"]),
                         "window_end": _millis(decoded["window_end"])})
    return requests


def _millis(value: Any) -> int:
    return int(value.timestamp() * 1000) if isinstance(value, datetime) else int(value)

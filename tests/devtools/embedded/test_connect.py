"""The embedded Connect worker: Debezium streams a PostgreSQL table's snapshot and changes to Kafka, a killed
worker resumes its connector, and `rekey connect` reports and refuses as the other embedded servers do."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from confluent_kafka.admin import AdminClient
from psycopg import sql
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import with_plugins
from kafka_rekey_dev.embedded.connect import ConnectWorker, postgres_connector_config
from tests.fixtures.connect import DebeziumConnector
from tests.support.kafka import read_topic
from tests.support.waiting import wait_until

app = with_plugins()

TABLE = "interactions"


def test_the_connector_config_is_what_rekey_reads_and_extra_overrides_it() -> None:
    config = postgres_connector_config(
        topic_prefix="crm", database="crm", host="db", port=5432, user="u", password="p",
        table_include_list=["public.interactions", "public.notes"], slot_name="s", publication_name="pub",
        heartbeat_ms=5000, extra={"value.converter.schemas.enable": "false", "time.precision.mode": "connect"},
    )
    assert config["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert config["plugin.name"] == "pgoutput" and config["publication.autocreate.mode"] == "filtered"
    assert config["table.include.list"] == "public.interactions,public.notes"
    assert "schema.include.list" not in config
    assert config["heartbeat.interval.ms"] == "5000" and config["database.port"] == "5432"
    assert config["topic.creation.default.replication.factor"] == "1"
    assert config["key.converter.schemas.enable"] == "true"
    assert config["value.converter.schemas.enable"] == "false" and config["time.precision.mode"] == "connect"


@pytest.fixture
def cdc_schema(postgres_dsn: str) -> Iterator[str]:
    """A schema of this test's own holding table `interactions` (id, org_id, note), two rows in it."""
    schema = f"cdc_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        table = sql.Identifier(schema, TABLE)
        conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, org_id text NOT NULL, note text)").format(table))
        # The old row in full in update and delete events, as rekey's sources are configured.
        conn.execute(sql.SQL("ALTER TABLE {} REPLICA IDENTITY FULL").format(table))
        conn.execute(sql.SQL("INSERT INTO {} VALUES (1, 'org-a', 'first'), (2, 'org-b', 'second')").format(table))
    try:
        yield schema
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def _run(dsn: str, schema: str, statement: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(table=sql.Identifier(schema, TABLE)))


def _changes(bootstrap: str, topic: str, count: int) -> list[tuple[int, dict[str, Any] | None]]:
    """(row id, payload or None for a tombstone) of the topic's first `count` records, in offset order per row."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wait_until(lambda: topic in admin.list_topics(timeout=5).topics, 60, f"Debezium created {topic}")

    def enough() -> list[tuple[int, dict[str, Any] | None]]:
        records = read_topic(bootstrap, topic, timeout=10)
        return [] if len(records) < count else [
            (json.loads(r.key or b"")["payload"]["id"],
             json.loads(r.value)["payload"] if r.value is not None else None) for r in records]

    return wait_until(enough, 60, f"{count} change events on {topic}", interval=0.5)


def _ops(changes: list[tuple[int, dict[str, Any] | None]]) -> dict[int, list[str | None]]:
    by_row: dict[int, list[str | None]] = {}
    for row_id, payload in changes:
        by_row.setdefault(row_id, []).append(payload["op"] if payload is not None else None)
    return by_row


@pytest.mark.broker
@pytest.mark.postgres
@pytest.mark.connect
def test_snapshot_inserts_updates_deletes_and_tombstones_arrive_per_row_in_order(
        cdc_schema: str, debezium_connector: Callable[..., DebeziumConnector], kafka_bootstrap: str,
        postgres_dsn: str) -> None:
    connector = debezium_connector([f"{cdc_schema}.{TABLE}"])
    topic = connector.topic(cdc_schema, TABLE)
    assert _ops(_changes(kafka_bootstrap, topic, 2)) == {1: ["r"], 2: ["r"]}  # the snapshot, before any change

    _run(postgres_dsn, cdc_schema, "INSERT INTO {table} VALUES (3, 'org-c', 'third')")
    _run(postgres_dsn, cdc_schema, "UPDATE {table} SET note = 'edited' WHERE id = 1")
    _run(postgres_dsn, cdc_schema, "DELETE FROM {table} WHERE id = 2")

    changes = _changes(kafka_bootstrap, topic, 6)
    assert _ops(changes) == {1: ["r", "u"], 2: ["r", "d", None], 3: ["c"]}
    payloads = {(row_id, p["op"]): p for row_id, p in changes if p is not None}
    assert payloads[(3, "c")]["after"] == {"id": 3, "org_id": "org-c", "note": "third"}
    assert payloads[(1, "u")]["before"]["note"] == "first" and payloads[(1, "u")]["after"]["note"] == "edited"
    assert payloads[(2, "d")]["before"] == {"id": 2, "org_id": "org-b", "note": "second"}
    assert payloads[(2, "d")]["after"] is None
    assert {(p["source"]["schema"], p["source"]["table"]) for p in payloads.values()} == {(cdc_schema, TABLE)}


@pytest.mark.broker
@pytest.mark.postgres
@pytest.mark.connect
def test_a_killed_worker_resumes_its_connector_and_streams_what_changed_meanwhile(
        cdc_schema: str, debezium_connector: Callable[..., DebeziumConnector], connect_worker: ConnectWorker,
        kafka_bootstrap: str, postgres_dsn: str) -> None:
    connector = debezium_connector([f"{cdc_schema}.{TABLE}"])
    topic = connector.topic(cdc_schema, TABLE)
    _changes(kafka_bootstrap, topic, 2)
    connect_worker.restart_connector(connector.name)
    connect_worker.wait_connector_running(connector.name)

    connect_worker.kill()
    assert not connect_worker.running()
    _run(postgres_dsn, cdc_schema, "INSERT INTO {table} VALUES (3, 'org-c', 'while the worker was down')")
    connect_worker.start(timeout=180, die_with_caller=True)
    connect_worker.wait_connector_running(connector.name)

    # At least once: a change read before the kill but not yet flushed to the offsets is streamed again.
    assert "c" in _ops(_changes(kafka_bootstrap, topic, 3))[3]


@pytest.mark.broker
@pytest.mark.connect
def test_status_reports_the_worker_and_its_connectors(connect_worker: ConnectWorker) -> None:
    result = CliRunner().invoke(app, ["connect", "status", "--data-dir", str(connect_worker.data_dir)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["ready"] is True and report["url"] == connect_worker.url
    assert report["bootstrap_servers"] == connect_worker.state.bootstrap_servers
    assert report["pid"] == connect_worker.state.pid and isinstance(report["connectors"], list)


@pytest.mark.broker
@pytest.mark.connect
def test_start_refuses_another_port_for_a_running_worker(connect_worker: ConnectWorker) -> None:
    other = connect_worker.state.port + 1
    result = CliRunner().invoke(app, ["connect", "start", "--data-dir", str(connect_worker.data_dir),
                                      "--port", str(other)])
    assert result.exit_code == 2
    assert f"already runs with port {connect_worker.state.port}" in " ".join(result.output.split())


def test_status_of_a_worker_never_started_is_not_ready(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["connect", "status", "--data-dir", str(tmp_path)])
    assert result.exit_code == 3
    assert json.loads(result.output)["running"] is False


def test_start_on_a_busy_port_says_which_port(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        result = CliRunner().invoke(app, ["connect", "start", "--data-dir", str(tmp_path), "--port", str(busy)])
    assert result.exit_code == 2
    assert f"port {busy} on 127.0.0.1 is in use" in " ".join(result.output.split())
    assert not ConnectWorker(tmp_path).running()

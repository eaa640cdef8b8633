"""The live ACL fed by Debezium's PostgreSQL connector in Kafka Connect: a CRM table with a surrogate key, its
snapshot then a streamed workload (updates leaving a TOASTed column unchanged, a multi-row transaction, deletes
under the default replica identity), the ACL killed in the middle of the snapshot, and the Connect worker killed
mid-stream: every committed row change is exactly one domain event, in commit order per interaction, with dense
sequences, and nothing is dead-lettered."""

from __future__ import annotations

import json
import os
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from confluent_kafka.admin import AdminClient
from psycopg import sql

from services.catalog_files import load_catalog
from services.devtools.embedded.connect import ConnectWorker
from services.devtools.embedded.workers import ServiceProcess
from services.kafka.topics import create_topics
from shared.avro import decode_body, load_schema, parse_schema, unframe
from shared.catalog import Catalog
from shared.translation.connect_values import UNAVAILABLE, UNCHANGED
from tests.fixtures.connect import DebeziumConnector
from tests.support.kafka import read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.connect, pytest.mark.registry]

ORGS = ("org-cdc-a", "org-cdc-b", "org-cdc-c")
SNAPSHOT_ROWS = 30_000
TOASTED_EVERY = 50  # every 50th row carries a notes value large enough to be stored out of line


class CrmTable:
    """A CRM `interactions` table with a surrogate key, and the row changes committed to it, in commit order."""

    def __init__(self, dsn: str, name: str) -> None:
        self.dsn, self.name = dsn, name
        self.changes: dict[int, list[str]] = defaultdict(list)  # row id -> ops, in commit order
        self.ids: dict[int, tuple[str, str]] = {}
        self.toasted: set[int] = set()
        with self._connect() as conn:
            conn.execute(sql.SQL(
                "CREATE TABLE {} (id bigserial PRIMARY KEY, org_id text NOT NULL, interaction_id text NOT NULL, "
                "status text NOT NULL, interaction_type text, updated_at timestamptz NOT NULL DEFAULT now(), "
                "notes text)").format(sql.Identifier(name)))

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True)

    def insert(self, count: int, op: str = "c", conn: psycopg.Connection[Any] | None = None) -> list[int]:
        rows = []
        for _ in range(count):
            number = len(self.ids) + len(rows) + 1
            notes = os.urandom(6000).hex() if number % TOASTED_EVERY == 0 else "short note"
            rows.append((ORGS[number % len(ORGS)], f"int-{uuid.uuid4().hex[:12]}", "queued", "call", notes))
        statement = sql.SQL("INSERT INTO {} (org_id, interaction_id, status, interaction_type, notes) "
                            "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[]) "
                            "RETURNING id, org_id, interaction_id, notes").format(sql.Identifier(self.name))
        with (self._connect() if conn is None else _borrowed(conn)) as target:
            returned = target.execute(statement, [list(column) for column in zip(*rows, strict=True)]).fetchall()
        ids = []
        for row_id, org, interaction, notes in returned:
            self.ids[row_id] = (org, interaction)
            self.changes[row_id].append(op)
            if len(notes) > 1000:
                self.toasted.add(row_id)
            ids.append(row_id)
        return ids

    def update_status(self, row_ids: list[int], status: str, conn: psycopg.Connection[Any] | None = None) -> None:
        """An update that leaves `notes` as it is (a TOASTed one is then not in the change)."""
        with (self._connect() if conn is None else _borrowed(conn)) as target:
            target.execute(sql.SQL("UPDATE {} SET status = %s, updated_at = now() WHERE id = ANY(%s)").format(
                sql.Identifier(self.name)), [status, row_ids])
        for row_id in row_ids:
            self.changes[row_id].append("u")

    def delete(self, row_ids: list[int]) -> None:
        with self._connect() as conn:
            conn.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(sql.Identifier(self.name)), [row_ids])
        for row_id in row_ids:
            self.changes[row_id].append("d")

    def transaction(self, inserts: int, updated: list[int]) -> None:
        """Inserts and updates committed in one transaction."""
        with psycopg.connect(self.dsn) as conn, conn.transaction():
            self.insert(inserts, conn=conn)
            self.update_status(updated, "transferred", conn=conn)

    def expected(self) -> dict[str, list[str]]:
        """Output key (`org:interaction`) -> the ops of its row, in commit order."""
        return {f"{org}:{interaction}": self.changes[row_id] for row_id, (org, interaction) in self.ids.items()}

    def drop(self) -> None:
        with self._connect() as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.name)))


class _borrowed:
    """A connection the caller owns, used in a `with` without closing it."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def __enter__(self) -> psycopg.Connection[Any]:
        return self.conn

    def __exit__(self, *_: object) -> None:
        return None


def _cdc_catalog(catalog_factory: Callable[..., Path], kafka_admin: AdminClient, topic: str) -> tuple[Path, Catalog]:
    """The repo's catalog renamed for this test, its CDC source being the connector's topic."""
    path = catalog_factory()
    data = yaml.safe_load(path.read_text())
    cdc = next(source for source in data["sources"] if source.get("format") == "debezium")
    cdc["name"], cdc["schema_subject"] = topic, f"{topic}-value"
    data["sources"] = [cdc]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    catalog = load_catalog(path)
    create_topics(kafka_admin, catalog.provisioned_topics())
    return path, catalog


def _domain_events(bootstrap: str, catalog: Catalog) -> dict[str, list[dict[str, Any]]]:
    """Output key -> its domain events in offset order, decoded."""
    schema = parse_schema(load_schema("interaction_event"))
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for topic in catalog.families["interaction_events"].output_topics:
        for record in read_topic(bootstrap, topic):
            assert record.key is not None and record.value is not None
            by_key[record.key.decode()].append(decode_body(unframe(record.value)[1], schema))
    return by_key


def _assert_each_change_once_in_order(table: CrmTable, events: dict[str, list[dict[str, Any]]],
                                      exactly_once: bool) -> None:
    expected = table.expected()
    assert set(events) == set(expected), (len(set(expected) - set(events)), len(set(events) - set(expected)))
    redelivered = 0
    for key, ops in expected.items():
        written = events[key]
        if not exactly_once:  # at-least-once: a record written twice is the same record, its sequence repeated
            first = {event["sequence"]: event for event in written}
            redelivered += len(written) - len(first)
            assert all(first[event["sequence"]] == event for event in written), key
            written = [first[sequence] for sequence in sorted(first)]
        assert [event["change_op"] for event in written] == ops, key
        assert [event["sequence"] for event in written] == list(range(1, len(ops) + 1)), key
    assert exactly_once is False or redelivered == 0


def _assert_payloads_plain(table: CrmTable, events: dict[str, list[dict[str, Any]]]) -> None:
    unchanged_updates = 0
    for row_id in table.toasted:
        org, interaction = table.ids[row_id]
        for event in events[f"{org}:{interaction}"]:
            assert UNAVAILABLE not in event["payload"]
            payload = json.loads(event["payload"])
            if event["change_op"] == "u":
                assert payload.get(UNCHANGED) == ["notes"] and "notes" not in payload, payload
                unchanged_updates += 1
    assert unchanged_updates > 0, "no update of a row with a TOASTed column was checked"


@pytest.fixture
def crm_table(postgres_dsn: str) -> Any:
    table = CrmTable(postgres_dsn, f"interactions_{uuid.uuid4().hex[:8]}")
    yield table
    table.drop()


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_every_committed_row_change_is_one_domain_event_through_an_acl_restart_and_a_connect_kill(
    crm_table: CrmTable, debezium_connector: Callable[..., DebeziumConnector], connect_worker: ConnectWorker,
    catalog_factory: Callable[..., Path], kafka_admin: AdminClient, kafka_bootstrap: str, schema_registry_url: str,
    tmp_path: Path, guarantee: str,
) -> None:
    prefix = f"crm{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}.public.{crm_table.name}"
    catalog_path, catalog = _cdc_catalog(catalog_factory, kafka_admin, topic)
    crm_table.insert(SNAPSHOT_ROWS, op="r")
    env = {**acl_env(kafka_bootstrap, schema_registry_url, catalog_path, tmp_path / "state"),
           "REKEY_PROCESSING_GUARANTEE": guarantee}
    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        connector = debezium_connector([f"public.{crm_table.name}"], topic_prefix=prefix)
        assert connector.topic("public", crm_table.name) == topic
        # The ACL killed while the snapshot is being translated: its successor restores the tables (the rows'
        # ids among them) from their changelogs and goes on from the committed offsets.
        killed_at = wait_until(lambda: (produced := acl.metric("rekey_produced_total", service="acl")) >= 2000
                               and produced, 60, "the ACL produced part of the snapshot")
        acl.kill()
        assert killed_at < SNAPSHOT_ROWS, f"the ACL had produced the whole snapshot ({killed_at:.0f}) when killed"
        acl = ServiceProcess("acl", env, tmp_path, name="acl-restarted").start()

        crm_table.update_status(list(crm_table.ids)[:600], "active")  # toasted notes among them stay unchanged
        streamed = crm_table.insert(200)
        crm_table.transaction(20, streamed[:20])
        connect_worker.kill()  # Debezium resumes from its last flushed offset: what it re-sends, the ACL drops
        crm_table.update_status(streamed[20:120], "completed")
        connect_worker.start(timeout=120, die_with_caller=True)
        connect_worker.wait_connector_running(connector.name, timeout=90)
        crm_table.delete(list(crm_table.ids)[:150] + streamed[100:150])  # replica identity DEFAULT: only the key
        crm_table.update_status(streamed[150:200], "abandoned")

        expected_events = sum(len(ops) for ops in crm_table.changes.values())
        events = wait_until(
            lambda: (found := _domain_events(kafka_bootstrap, catalog))
            and len({(k, e["sequence"]) for k, es in found.items() for e in es}) >= expected_events and found,
            180, f"{expected_events} distinct domain events")
        dead_lettered = acl.metric("rekey_dead_lettered_total", service="acl")
    finally:
        acl.stop()
    _assert_each_change_once_in_order(crm_table, events, guarantee == "exactly_once")
    _assert_payloads_plain(crm_table, events)
    assert dead_lettered == 0
    assert read_topic(kafka_bootstrap, catalog.dlq_topic) == []

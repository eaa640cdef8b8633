"""A CRM `interactions` table in the test PostgreSQL for tests fed by the real Debezium connector, and a catalog
whose CDC source is the connector's topic."""

from __future__ import annotations

import os
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import yaml
from confluent_kafka.admin import AdminClient
from psycopg import sql

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.kafka.topics import create_topics
from kafka_rekey.shared.avro import decode_body, load_schema, parse_schema, unframe
from kafka_rekey.shared.catalog import Catalog
from tests.support.kafka import read_topic
from tests.support.waiting import wait_until

ORGS = ("org-cdc-a", "org-cdc-b", "org-cdc-c")
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


def cdc_catalog(catalog_factory: Callable[..., Path], kafka_admin: AdminClient, topic: str) -> tuple[Path, Catalog]:
    """The repo's catalog renamed for a test, its only source the CDC source, named as the connector's topic."""
    path = catalog_factory()
    data = yaml.safe_load(path.read_text())
    cdc = next(source for source in data["sources"] if source.get("format") == "debezium")
    cdc["name"], cdc["schema_subject"] = topic, f"{topic}-value"
    data["sources"] = [cdc]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    catalog = load_catalog(path)
    create_topics(kafka_admin, catalog.provisioned_topics())
    return path, catalog


def domain_events(bootstrap: str, catalog: Catalog) -> dict[str, list[dict[str, Any]]]:
    """Output key -> its domain events in offset order, decoded."""
    schema = parse_schema(load_schema("interaction_event"))
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for topic in catalog.families["interaction_events"].output_topics:
        for record in read_topic(bootstrap, topic):
            assert record.key is not None and record.value is not None
            by_key[record.key.decode()].append(decode_body(unframe(record.value)[1], schema))
    return by_key


def assert_each_change_once_in_order(table: CrmTable, events: dict[str, list[dict[str, Any]]],
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


def wait_domain_events(bootstrap: str, catalog: Catalog, table: CrmTable,
                       timeout: float = 180) -> dict[str, list[dict[str, Any]]]:
    """The domain events once there are as many distinct (key, sequence) as `table` committed changes."""
    expected = sum(len(ops) for ops in table.changes.values())

    def enough() -> dict[str, list[dict[str, Any]]] | None:
        found = domain_events(bootstrap, catalog)
        return found if len({(key, e["sequence"]) for key, es in found.items() for e in es}) >= expected else None

    return wait_until(enough, timeout, f"{expected} distinct domain events")

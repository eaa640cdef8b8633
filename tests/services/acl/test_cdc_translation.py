"""Debezium 3.6.1's PostgreSQL connector (pgoutput, in the embedded Connect worker, on the embedded PostgreSQL):
each of its real quirks is a test of what the translation makes of the change events it really writes.

The records are read from the topics the connector wrote and translated as `rekey translate` translates them:
`shared.translation.compiled` bound to the declaration a catalog gives a `debezium` source
(`SourceTopic(...).translation`, a `DebeziumSource`) and to a `RememberedRows` that learns from each translated
record, in offset order per partition. One connector, with heartbeats and the transaction metadata topic, captures
the tables of the snapshot, TOAST, replica identity and schema-change checks; the time and decimal modes, the
multi-tenant layouts and the converter without schemas take connectors of their own.
"""

from __future__ import annotations

import json
import math
import secrets
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from confluent_kafka import KafkaException
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from kafka_rekey.shared.catalog.models import SourceTopic
from kafka_rekey.shared.translation import (
    DomainEventDraft,
    Outcome,
    PoisonPill,
    PoisonReason,
    RememberedRows,
    Skip,
    SkipReason,
    SourceRecord,
    compiled,
)
from kafka_rekey.shared.translation.connect_values import UNAVAILABLE, UNCHANGED
from kafka_rekey.shared.translation.debezium import DebeziumSource
from kafka_rekey.shared.translation.fields import EPOCH, ONE_MS
from kafka_rekey_dev.embedded.connect import ConnectWorker, postgres_connector_config
from tests.fixtures.connect import DebeziumConnector, drop_slot_and_publication
from tests.support.kafka import Record, end_offsets, read_topic
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.connect]

COLUMNS = ("id serial PRIMARY KEY, org_id text, interaction_id text, status text, interaction_type text, "
           "agent_id text, queue_id text, updated_at timestamptz")
"""The default table of a `debezium` source, under a surrogate key."""
HEARTBEAT_MS = 500
Translated = list[tuple[Record, Outcome]]


# --- the declaration, the records, the translation ------------------------------------------------------------


def declared(mapping: dict[str, Any] | None = None) -> DebeziumSource:
    """What the catalog gives a `format: debezium` source with this `mapping` (its org and interaction ids)."""
    source = SourceTopic.model_validate({
        "name": "crm.cdc", "format": "debezium", "mapping": mapping, "feeds": ["interaction_events"],
        "description": "a captured CRM table", "partitions": 4, "replication_factor": 1, "min_insync_replicas": 1,
        "retention_ms": 604_800_000, "retention_reason": "test", "cleanup_policy": "delete",
        "key": {"strategy": "custom", "definition": "Debezium primary-key struct", "expected_cardinality": 100},
        "ordering_scope": "per row", "idempotency": "source_position", "replay": "re-read",
        "schema_subject": "crm.cdc-value", "schema_compatibility": "BACKWARD",
    })
    assert isinstance(source.translation, DebeziumSource)
    return source.translation


DEFAULT = declared()


def translated(records: Sequence[Record], declaration: DebeziumSource = DEFAULT,
               rows: RememberedRows | None = None) -> Translated:
    """`records` translated in offset order per partition, the row memory (fresh unless given) learning from each."""
    rows = RememberedRows() if rows is None else rows
    translate = compiled(declaration, rows=rows)
    result: Translated = []
    for record in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        source = SourceRecord(record.topic, record.partition, record.offset, record.key, record.value,
                              record.headers)
        outcome = translate(source)
        rows.learn(source, outcome)
        result.append((record, outcome))
    return result


def drafts(outcomes: Translated) -> list[tuple[Record, DomainEventDraft]]:
    return [(record, outcome) for record, outcome in outcomes if isinstance(outcome, DomainEventDraft)]


def pills(outcomes: Translated) -> list[PoisonPill]:
    return [outcome for _, outcome in outcomes if isinstance(outcome, PoisonPill)]


def skips(outcomes: Translated) -> Counter[SkipReason]:
    return Counter(outcome.reason for _, outcome in outcomes if isinstance(outcome, Skip))


def change(record: Record) -> dict[str, Any]:
    """The change event as the connector wrote it (the payload of the schema wrapper, if there is one)."""
    assert record.value is not None
    value: dict[str, Any] = json.loads(record.value)
    return value["payload"] if "schema" in value and "payload" in value else value


def row_id(record: Record) -> int:
    key = json.loads(record.key or b"")
    return int(key.get("payload", key)["id"])


def by_row(events: list[tuple[Record, DomainEventDraft]]) -> dict[int, list[DomainEventDraft]]:
    """Each row's events, in offset order (a row's changes are on one partition)."""
    rows: dict[int, list[DomainEventDraft]] = {}
    for record, draft in events:
        rows.setdefault(row_id(record), []).append(draft)
    return rows


def ms(moment: str) -> int:
    """An ISO-8601 instant as epoch milliseconds (no offset: UTC, as Debezium encodes a `timestamp`)."""
    parsed = datetime.fromisoformat(moment)
    return ((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)) - EPOCH) // ONE_MS


def record_count(bootstrap: str, topic: str) -> int:
    """Records written to `topic` so far (0 while it does not exist or its partitions have no leader yet)."""
    try:
        return sum(end_offsets(bootstrap, topic).values())
    except (KafkaException, KeyError):
        return 0


def records(bootstrap: str, topic: str, count: int) -> list[Record]:
    """The records of `topic` once it holds at least `count`, in partition/offset order."""
    wait_until(lambda: record_count(bootstrap, topic) >= count, 60, f"{count} records on {topic}", interval=0.3)
    return read_topic(bootstrap, topic, timeout=10)


# --- PostgreSQL --------------------------------------------------------------------------------------------------


def execute(dsn: str, *statements: str | sql.Composable, params: Sequence[Any] = ()) -> tuple[int, int]:
    """Run `statements` in autocommit, each its own transaction; the wall-clock window (epoch ms) they ran in."""
    started = math.floor(time.time() * 1000)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement, params or None)
    return started, math.ceil(time.time() * 1000)


def require_logical(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        wal_level = conn.execute("SHOW wal_level").fetchone()
    if wal_level != ("logical",):
        pytest.skip(f"the session PostgreSQL runs with wal_level={wal_level}, Debezium needs logical")


# --- one connector for the snapshot, TOAST, replica identity, heartbeat, transaction and schema-change checks ------


@dataclass
class Captured:
    """What the shared connector wrote, topic by topic, and what the statements it captured did."""

    prefix: str
    schema: str
    topics: dict[str, list[Record]]
    committed: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    """(table, row id) of each delete -> the wall-clock window (epoch ms) it committed in."""
    bodies: tuple[str, str] = ("", "")
    """The TOASTed values of `transcripts.body`: inserted, then replaced."""
    transactions: int = 0
    """Transactions that changed rows (each a BEGIN and an END on the transaction topic)."""
    early: list[Record] = field(default_factory=list)
    """`retyped`'s records before its primary key was retyped, as a consumer read them then."""

    def table(self, name: str) -> list[Record]:
        return self.topics[f"{self.prefix}.{self.schema}.{name}"]


# Records each table's changes make (a delete is two: the change and its tombstone).
EXPECTED_RECORDS = {"interactions": 13, "interactions_full": 7, "transcripts": 3, "transcripts_full": 2,
                    "evolving": 8, "retyped": 7}


@pytest.fixture(scope="module")
def captured(connect_worker: ConnectWorker, postgres_dsn: str, kafka_bootstrap: str) -> Iterator[Captured]:
    """A schema of six tables (three rows of `interactions` and two of `interactions_full` in the snapshot), one
    connector with heartbeats and transaction metadata on them, then the streamed changes every check reads."""
    require_logical(postgres_dsn)
    suffix = uuid.uuid4().hex[:10]
    schema = f"cdcq_{suffix}"
    connector = DebeziumConnector(f"cdcq-{suffix}", f"cdcq{suffix}", f"slot_{suffix}", f"pub_{suffix}")
    capture = Captured(connector.topic_prefix, schema, {})

    def run(*statements: str, params: Sequence[Any] = ()) -> tuple[int, int]:
        capture.transactions += sum(not s.startswith("ALTER") for s in statements)
        return execute(postgres_dsn, *(s.format(schema=schema) for s in statements), params=params)

    execute(postgres_dsn, f"CREATE SCHEMA {schema}")
    try:
        for table, identity in (("interactions", "DEFAULT"), ("interactions_full", "FULL")):
            execute(postgres_dsn, f"CREATE TABLE {schema}.{table} ({COLUMNS})",
                    f"ALTER TABLE {schema}.{table} REPLICA IDENTITY {identity}")
        for table, identity in (("transcripts", "DEFAULT"), ("transcripts_full", "FULL")):
            execute(postgres_dsn, f"CREATE TABLE {schema}.{table} ({COLUMNS}, body text)",
                    f"ALTER TABLE {schema}.{table} REPLICA IDENTITY {identity}")
        execute(postgres_dsn, f"CREATE TABLE {schema}.evolving ({COLUMNS}, score text)",
                f"CREATE TABLE {schema}.retyped ({COLUMNS})")
        execute(postgres_dsn, *(f"INSERT INTO {schema}.interactions (org_id, interaction_id, status, updated_at) "
                                f"VALUES ('org-a', 'int-{n}', 'queued', '2026-03-01T10:00:0{n}.123456Z')"
                                for n in (1, 2, 3)))
        execute(postgres_dsn, *(f"INSERT INTO {schema}.interactions_full (org_id, interaction_id, status, updated_at) "
                                f"VALUES ('{org}', 'full-{n}', 'queued', '2026-03-01T10:00:0{n}Z')"
                                for n, org in ((1, "org-a"), (2, "org-b"))))
        params = conninfo_to_dict(postgres_dsn)
        connect_worker.put_connector(connector.name, postgres_connector_config(
            topic_prefix=connector.topic_prefix, database=str(params.get("dbname", "postgres")),
            host=str(params.get("host", "127.0.0.1")), port=int(str(params.get("port", 5432))),
            user=str(params.get("user", "postgres")), password=str(params.get("password", "")),
            table_include_list=[f"{schema}.{table}" for table in EXPECTED_RECORDS], slot_name=connector.slot_name,
            publication_name=connector.publication_name, heartbeat_ms=HEARTBEAT_MS,
            extra={"provide.transaction.metadata": "true"}))
        connect_worker.wait_connector_running(connector.name, timeout=60)

        # The first streamed change: an update of a snapshot row.
        run("UPDATE {schema}.interactions SET status = 'answered', updated_at = '2026-03-01T11:00:01.5Z' WHERE id = 1")
        run(*("INSERT INTO {schema}.retyped (org_id, interaction_id, status, updated_at) "
              f"VALUES ('org-a', 'rt-{n}', 'open', '2026-03-01T11:00:00Z')" for n in (1, 2)))

        # interactions (replica identity DEFAULT): rows 4 and 5 are inserted, 2 and 4 deleted, 3 updated twice in
        # one transaction that also inserts 5.
        run("INSERT INTO {schema}.interactions (org_id, interaction_id, status, updated_at) "
            "VALUES ('org-b', 'int-4', 'queued', '2026-03-01T11:00:00Z')")
        capture.committed[("interactions", 2)] = run("DELETE FROM {schema}.interactions WHERE id = 2")
        with psycopg.connect(postgres_dsn, autocommit=True) as conn, conn.transaction():
            conn.execute(sql.SQL("UPDATE {} SET status = 'held', updated_at = '2026-03-01T11:00:02Z' WHERE id = 3")
                         .format(sql.Identifier(schema, "interactions")))
            conn.execute(sql.SQL("UPDATE {} SET status = 'resumed', updated_at = '2026-03-01T11:00:03Z' "
                                 "WHERE id = 3").format(sql.Identifier(schema, "interactions")))
            conn.execute(sql.SQL("INSERT INTO {} (org_id, interaction_id, status, updated_at) "
                                 "VALUES ('org-b', 'int-5', 'queued', '2026-03-01T11:00:04Z')")
                         .format(sql.Identifier(schema, "interactions")))
        capture.transactions += 1
        run("UPDATE {schema}.interactions SET status = 'answered', updated_at = '2026-03-01T11:00:05Z' WHERE id = 4")
        capture.committed[("interactions", 4)] = run("DELETE FROM {schema}.interactions WHERE id = 4")
        # interactions_full (replica identity FULL): a snapshot row and an inserted row deleted.
        run("INSERT INTO {schema}.interactions_full (org_id, interaction_id, status, updated_at) "
            "VALUES ('org-c', 'full-3', 'queued', '2026-03-01T11:00:00Z')")
        capture.committed[("interactions_full", 1)] = run("DELETE FROM {schema}.interactions_full WHERE id = 1")
        capture.committed[("interactions_full", 3)] = run("DELETE FROM {schema}.interactions_full WHERE id = 3")
        # transcripts: a random body > 8 KB (stored out of line, TOASTed), an update leaving it, one replacing it.
        capture.bodies = (secrets.token_urlsafe(9000), secrets.token_urlsafe(9000))
        for table in ("transcripts", "transcripts_full"):
            run(f"INSERT INTO {{schema}}.{table} (org_id, interaction_id, status, updated_at, body) "
                f"VALUES ('org-a', 'tr-1', 'open', '2026-03-01T11:00:00Z', %s)", params=[capture.bodies[0]])
            run(f"UPDATE {{schema}}.{table} SET status = 'closed', updated_at = '2026-03-01T11:00:01Z'")
        run("UPDATE {schema}.transcripts SET body = %s, updated_at = '2026-03-01T11:00:02Z'",
            params=[capture.bodies[1]])
        # evolving: a column added, a text column turned integer, the event-time column retyped mid-stream; row 2's
        # channel set before its delete.
        run("INSERT INTO {schema}.evolving (org_id, interaction_id, status, updated_at, score) "
            "VALUES ('org-a', 'ev-1', 'open', '2026-03-01T11:00:00Z', '42')",
            "INSERT INTO {schema}.evolving (org_id, interaction_id, status, updated_at, score) "
            "VALUES ('org-a', 'ev-2', 'open', '2026-03-01T11:00:00Z', '7')",
            "ALTER TABLE {schema}.evolving ADD COLUMN channel text DEFAULT 'voice'",
            "UPDATE {schema}.evolving SET status = 'busy', updated_at = '2026-03-01T11:00:01Z' WHERE id = 1",
            "UPDATE {schema}.evolving SET channel = 'chat', updated_at = '2026-03-01T11:00:01Z' WHERE id = 2",
            "ALTER TABLE {schema}.evolving ALTER COLUMN score TYPE integer USING score::integer",
            "UPDATE {schema}.evolving SET status = 'wrapup', updated_at = '2026-03-01T11:00:02Z' WHERE id = 1",
            "ALTER TABLE {schema}.evolving ALTER COLUMN updated_at TYPE timestamp "
            "USING updated_at AT TIME ZONE 'UTC'",
            "UPDATE {schema}.evolving SET status = 'closed', updated_at = '2026-03-01 11:00:03.25' WHERE id = 1")
        capture.committed[("evolving", 2)] = run("DELETE FROM {schema}.evolving WHERE id = 2")
        # retyped: the primary key turned bigint once its rows' inserts have been read.
        retyped = connector.topic(schema, "retyped")
        capture.early = records(kafka_bootstrap, retyped, 2)
        run("ALTER TABLE {schema}.retyped ALTER COLUMN id TYPE bigint",
            "UPDATE {schema}.retyped SET status = 'busy', updated_at = '2026-03-01T11:00:01Z' WHERE id = 1")
        capture.committed[("retyped", 2)] = run("DELETE FROM {schema}.retyped WHERE id = 2")
        capture.committed[("retyped", 1)] = run("DELETE FROM {schema}.retyped WHERE id = 1")

        for table, count in EXPECTED_RECORDS.items():
            topic = connector.topic(schema, table)
            capture.topics[topic] = records(kafka_bootstrap, topic, count)
        for topic, count in ((f"{connector.topic_prefix}.transaction", 2 * capture.transactions),
                             (f"__debezium-heartbeat.{connector.topic_prefix}", 2)):
            capture.topics[topic] = records(kafka_bootstrap, topic, count)
        yield capture
    finally:
        connect_worker.delete_connector(connector.name)
        drop_slot_and_publication(postgres_dsn, connector)
        execute(postgres_dsn, f"DROP SCHEMA {schema} CASCADE")


def test_a_snapshot_then_streamed_changes_are_one_event_per_row_change(captured: Captured) -> None:
    outcomes = translated(captured.table("interactions"))
    assert pills(outcomes) == []
    assert skips(outcomes) == {SkipReason.TOMBSTONE: 2}
    events = drafts(outcomes)
    rows = by_row(events)
    assert {row: [draft.change_op for draft in drafts_] for row, drafts_ in rows.items()} == {
        1: ["r", "u"], 2: ["r", "d"], 3: ["r", "u", "u"], 4: ["c", "u", "d"], 5: ["c"]}
    assert {row: {(draft.org_id, draft.interaction_id) for draft in drafts_} for row, drafts_ in rows.items()} == {
        1: {("org-a", "int-1")}, 2: {("org-a", "int-2")}, 3: {("org-a", "int-3")}, 4: {("org-b", "int-4")},
        5: {("org-b", "int-5")}}
    assert len({draft.event_id for _, draft in events}) == len(events) == 11
    # What 3.6.1 writes as source.snapshot: the first row of the snapshot `first`, the last of a table that is
    # not the last one `last_in_data_collection` (the next table's first `first_in_data_collection`), the very
    # last `last`; streamed changes `false`.
    markers = {(row_id(record), draft.change_op): change(record)["source"]["snapshot"] for record, draft in events}
    assert {key: marker for key, marker in markers.items() if key[1] == "r"} == {
        (1, "r"): "first", (2, "r"): "true", (3, "r"): "last_in_data_collection"}
    assert {marker for key, marker in markers.items() if key[1] != "r"} == {"false"}
    full = {row_id(record): change(record)["source"]["snapshot"]
            for record, draft in drafts(translated(captured.table("interactions_full"))) if draft.change_op == "r"}
    assert full == {1: "first_in_data_collection", 2: "last"}
    # The event time: the row's updated_at (timestamptz: ISO-8601 text) for r/c/u, the commit time for d.
    assert {row: [draft.event_time_ms for draft in drafts_ if draft.change_op != "d"]
            for row, drafts_ in rows.items()} == {
        1: [ms("2026-03-01T10:00:01.123Z"), ms("2026-03-01T11:00:01.500Z")], 2: [ms("2026-03-01T10:00:02.123Z")],
        3: [ms("2026-03-01T10:00:03.123Z"), ms("2026-03-01T11:00:02Z"), ms("2026-03-01T11:00:03Z")],
        4: [ms("2026-03-01T11:00:00Z"), ms("2026-03-01T11:00:05Z")], 5: [ms("2026-03-01T11:00:04Z")]}
    for row in (2, 4):
        started, ended = captured.committed[("interactions", row)]
        assert started <= rows[row][-1].event_time_ms <= ended
    # The snapshot's rows share the LSN of its consistent point; no streamed change has a lower one.
    (snapshot_lsn,) = {draft.ordering_token for _, draft in events if draft.change_op == "r"}
    assert min(draft.ordering_token for _, draft in events if draft.change_op != "r") >= snapshot_lsn


def test_an_update_leaving_a_toasted_column_unchanged_names_it_instead_of_the_placeholder(
        captured: Captured) -> None:
    inserted, replaced = captured.bodies
    (created_record, created), (unchanged_record, unchanged), (_, changed) = drafts(
        translated(captured.table("transcripts")))
    assert change(unchanged_record)["after"]["body"] == UNAVAILABLE  # what the connector wrote
    assert UNAVAILABLE not in unchanged.payload
    payload = json.loads(unchanged.payload)
    assert "body" not in payload and payload[UNCHANGED] == ["body"] and payload["status"] == "closed"
    assert json.loads(created.payload)["body"] == inserted and len(created_record.value or b"") > 8192
    assert json.loads(changed.payload)["body"] == replaced and UNCHANGED not in json.loads(changed.payload)
    assert [draft.change_op for draft in (created, unchanged, changed)] == ["c", "u", "u"]
    # Under REPLICA IDENTITY FULL the connector takes the unchanged value from the old row: the update carries it.
    (_, _), (full_record, full_unchanged) = drafts(translated(captured.table("transcripts_full")))
    assert change(full_record)["after"]["body"] == inserted
    assert json.loads(full_unchanged.payload)["body"] == inserted and UNCHANGED not in full_unchanged.payload


def test_deletes_take_their_ids_from_the_row_memory_or_the_before_image(captured: Captured) -> None:
    # REPLICA IDENTITY DEFAULT: the before image carries the primary key; every other column is null, or the
    # column's default. The ids come from the row's earlier changes: the snapshot's read of row 2, the insert of 4.
    default = captured.table("interactions")
    outcomes = translated(default)
    deletes = {row_id(record): (record, draft) for record, draft in drafts(outcomes) if draft.change_op == "d"}
    assert {row: (draft.org_id, draft.interaction_id) for row, (_, draft) in deletes.items()} == {
        2: ("org-a", "int-2"), 4: ("org-b", "int-4")}
    for row, (record, draft) in deletes.items():
        before = change(record)["before"]
        assert before["id"] == row and before["org_id"] is None and before["interaction_id"] is None
        assert json.loads(draft.payload) == {"id": row}
    assert skips(outcomes) == {SkipReason.TOMBSTONE: 2}
    # A fresh row memory (a consumer that starts after the row's insert): the delete is the poison pill of its
    # own reason, not a missing org id; its tombstone still a counted skip.
    for record, _ in deletes.values():
        tombstone = next(r for r in default if (r.partition, r.offset) == (record.partition, record.offset + 1))
        (_, pill), (_, skip) = translated([record, tombstone])
        assert isinstance(pill, PoisonPill) and (pill.reason_code, pill.field) == (PoisonReason.UNKNOWN_ROW, "before")
        assert isinstance(skip, Skip) and skip.reason is SkipReason.TOMBSTONE
    # REPLICA IDENTITY FULL: the before image is the whole row, so a fresh memory needs nothing.
    full = captured.table("interactions_full")
    full_outcomes = translated([record for record in full if record.value is None or change(record)["op"] == "d"])
    assert pills(full_outcomes) == [] and skips(full_outcomes) == {SkipReason.TOMBSTONE: 2}
    full_deletes = {row_id(record): draft for record, draft in drafts(full_outcomes)}
    assert {row: (draft.org_id, draft.interaction_id, draft.change_op) for row, draft in full_deletes.items()} == {
        1: ("org-a", "full-1", "d"), 3: ("org-c", "full-3", "d")}
    assert json.loads(full_deletes[3].payload)["status"] == "queued"
    for row, draft in full_deletes.items():
        started, ended = captured.committed[("interactions_full", row)]
        assert started <= draft.event_time_ms <= ended


def test_heartbeats_and_transaction_markers_are_counted_skips(captured: Captured) -> None:
    heartbeats = captured.topics[f"__debezium-heartbeat.{captured.prefix}"]
    assert len(heartbeats) >= 2
    assert json.loads(heartbeats[0].key or b"")["payload"] == {"serverName": captured.prefix}
    assert set(change(heartbeats[0])) == {"ts_ms"}
    outcomes = translated(heartbeats)
    assert skips(outcomes) == {SkipReason.HEARTBEAT: len(heartbeats)}

    markers = captured.topics[f"{captured.prefix}.transaction"]
    outcomes = translated(markers)
    assert skips(outcomes) == {SkipReason.TRANSACTION: len(markers)}
    statuses = Counter(change(record)["status"] for record in markers)
    assert statuses == {"BEGIN": captured.transactions, "END": captured.transactions}
    # A transaction's BEGIN and END carry different ids (`<txId>:<lsn>`, the LSN of each), so they are keyed
    # apart and may land on different partitions; only the txId part pairs them.
    begins = {change(r)["id"] for r in markers if change(r)["status"] == "BEGIN"}
    ends = {change(r)["id"] for r in markers if change(r)["status"] == "END"}
    assert {i.split(":")[0] for i in begins} == {i.split(":")[0] for i in ends} and not begins & ends


def test_columns_added_and_retyped_mid_stream_poison_nothing(captured: Captured) -> None:
    outcomes = translated(captured.table("evolving"))
    assert pills(outcomes) == [] and skips(outcomes) == {SkipReason.TOMBSTONE: 1}
    rows = by_row(drafts(outcomes))
    payloads = [json.loads(draft.payload) for draft in rows[1]]
    assert [(p["status"], p.get("channel"), p["score"]) for p in payloads] == [
        ("open", None, "42"), ("busy", "voice", "42"), ("wrapup", "voice", 42), ("closed", "voice", 42)]
    # updated_at went from timestamptz (ISO-8601 text) to timestamp (epoch microseconds) under the event time.
    assert [draft.event_time_ms for draft in rows[1]] == [
        ms("2026-03-01T11:00:00Z"), ms("2026-03-01T11:00:01Z"), ms("2026-03-01T11:00:02Z"),
        ms("2026-03-01T11:00:03.25Z")]
    assert payloads[-1]["updated_at"] == "2026-03-01T11:00:03.250000"
    # Row 2's delete: the before image names the column default ('voice') where the row held 'chat'.
    (delete_record, deleted) = next((r, d) for r, d in drafts(outcomes) if d.change_op == "d")
    assert change(delete_record)["before"]["channel"] == "voice"
    assert json.loads(rows[2][1].payload)["channel"] == "chat"
    assert (deleted.org_id, deleted.interaction_id) == ("org-a", "ev-2") and json.loads(deleted.payload) == {"id": 2}
    started, ended = captured.committed[("evolving", 2)]
    assert started <= deleted.event_time_ms <= ended


def test_a_primary_key_retyped_mid_stream_still_names_its_rows(captured: Captured) -> None:
    """The JSON converter writes the key's schema into every key: `ALTER COLUMN id TYPE bigint` changes the key
    bytes of every row (so the partition a row's changes go to may change too). The row memory knows the row by
    its key's columns."""
    early = {(record.partition, record.offset) for record in captured.early}
    later = [record for record in captured.table("retyped") if (record.partition, record.offset) not in early]
    rows = RememberedRows()
    outcomes = translated(captured.early, rows=rows) + translated(later, rows=rows)
    assert pills(outcomes) == [] and skips(outcomes) == {SkipReason.TOMBSTONE: 2}
    key_types = {json.loads(record.key or b"")["schema"]["fields"][0]["type"] for record in later}
    assert {json.loads(r.key or b"")["schema"]["fields"][0]["type"] for r in captured.early} == {"int32"}
    assert key_types == {"int64"}
    events = {(row_id(record), draft.change_op): draft for record, draft in drafts(outcomes)}
    assert {key: (draft.org_id, draft.interaction_id) for key, draft in events.items()} == {
        (1, "c"): ("org-a", "rt-1"), (2, "c"): ("org-a", "rt-2"), (1, "u"): ("org-a", "rt-1"),
        (2, "d"): ("org-a", "rt-2"), (1, "d"): ("org-a", "rt-1")}
    for row in (1, 2):
        started, ended = captured.committed[("retyped", row)]
        assert started <= events[(row, "d")].event_time_ms <= ended


# --- connectors of their own: time and decimal modes, multi-tenant layouts, the converter without schemas ---------


@pytest.fixture
def schema(postgres_dsn: str) -> Iterator[str]:
    """A schema of this test's own (dropped with its tables afterwards)."""
    name = f"cdct_{uuid.uuid4().hex[:10]}"
    execute(postgres_dsn, f"CREATE SCHEMA {name}")
    try:
        yield name
    finally:
        execute(postgres_dsn, f"DROP SCHEMA {name} CASCADE")


TYPED = ("id int PRIMARY KEY, org_id text, interaction_id text, updated_at timestamp, amount numeric(12,2), "
         "ratio numeric, due date, starts time")
"""A `timestamp` event time, and a fixed and a variable scale decimal, a date and a time in the payload."""
TYPED_ROWS = (
    (1, "ty-1", "2026-03-01 10:00:00.123456", "1234.50", "0.125", "2026-03-01", "10:11:12.345678"),
    (2, "ty-2", "2001-09-09 01:46:40", "-7.10", "-3", "1969-12-31", "00:00:00"),
    (3, "ty-3", "2026-03-01 23:59:59.999999", "0.05", "12345678901234567890.5", "2000-02-29", "23:59:59.999999"),
)
TYPED_EVENT_TIMES = [ms("2026-03-01T10:00:00.123Z"), 1_000_000_000_000, ms("2026-03-01T23:59:59.999Z")]
DATES = ["2026-03-01", "1969-12-31", "2000-02-29"]


def insert_typed(dsn: str, table: str, *rows: tuple[Any, ...]) -> None:
    for row in rows:
        execute(dsn, f"INSERT INTO {table} VALUES (%s, 'org-a', %s, %s, %s, %s, %s, %s)", params=row)


@pytest.mark.parametrize(("time_precision", "decimals", "updated_at", "amounts", "ratios", "starts"), [
    ("adaptive", "precise",
     ["2026-03-01T10:00:00.123456", "2001-09-09T01:46:40", "2026-03-01T23:59:59.999999"],
     ["1234.50", "-7.10", "0.05"], ["0.125", "-3", "12345678901234567890.5"],
     ["10:11:12.345678", "00:00:00", "23:59:59.999999"]),
    ("adaptive_time_microseconds", "double",
     ["2026-03-01T10:00:00.123456", "2001-09-09T01:46:40", "2026-03-01T23:59:59.999999"],
     [1234.5, -7.1, 0.05], [0.125, -3.0, 1.2345678901234567e19],
     ["10:11:12.345678", "00:00:00", "23:59:59.999999"]),
    ("connect", "string",  # Kafka Connect's own types: milliseconds
     ["2026-03-01T10:00:00.123000", "2001-09-09T01:46:40", "2026-03-01T23:59:59.999000"],
     ["1234.50", "-7.10", "0.05"], ["0.125", "-3", "12345678901234567890.5"],
     ["10:11:12.345000", "00:00:00", "23:59:59.999000"]),
])
def test_each_time_precision_and_decimal_handling_mode_gives_the_event_time_and_plain_values(
        schema: str, debezium_connector: Callable[..., DebeziumConnector], kafka_bootstrap: str,
        postgres_dsn: str, time_precision: str, decimals: str, updated_at: list[str], amounts: list[Any],
        ratios: list[Any], starts: list[str]) -> None:
    table = f"{schema}.typed"
    execute(postgres_dsn, f"CREATE TABLE {table} ({TYPED})")
    insert_typed(postgres_dsn, table, *TYPED_ROWS[:2])  # the snapshot's
    connector = debezium_connector([table], extra={"time.precision.mode": time_precision,
                                                   "decimal.handling.mode": decimals})
    insert_typed(postgres_dsn, table, TYPED_ROWS[2])  # streamed
    outcomes = translated(records(kafka_bootstrap, connector.topic(schema, "typed"), 3))
    assert pills(outcomes) == []
    events = sorted(drafts(outcomes), key=lambda event: row_id(event[0]))
    assert [draft.change_op for _, draft in events] == ["r", "r", "c"]
    assert [draft.event_time_ms for _, draft in events] == TYPED_EVENT_TIMES
    payloads = [json.loads(draft.payload) for _, draft in events]
    assert [p["updated_at"] for p in payloads] == updated_at
    assert [p["amount"] for p in payloads] == amounts
    assert [p["ratio"] for p in payloads] == ratios
    assert [p["due"] for p in payloads] == DATES
    assert [p["starts"] for p in payloads] == starts


TENANT_TABLE = "id serial PRIMARY KEY, interaction_id text, status text, interaction_type text, updated_at timestamptz"
"""A tenant's table: no org column, the org is where the table is."""


def tenant_changes(dsn: str, table: str) -> None:
    execute(dsn, f"INSERT INTO {table} (interaction_id, status, updated_at) "
                 "VALUES ('int-2', 'queued', '2026-03-01T11:00:00Z')",
            f"UPDATE {table} SET status = 'answered', updated_at = '2026-03-01T11:00:01Z' WHERE id = 1",
            f"DELETE FROM {table} WHERE id = 1")


def create_tenant_table(dsn: str, table: str) -> None:
    """The table, with row 1 ('int-1') for the snapshot."""
    execute(dsn, f"CREATE TABLE {table} ({TENANT_TABLE})",
            f"INSERT INTO {table} (interaction_id, status, updated_at) "
            "VALUES ('int-1', 'queued', '2026-03-01T10:00:00Z')")


def assert_one_org_per_tenant(topics: list[str], declaration: DebeziumSource, bootstrap: str) -> None:
    """Each tenant's topic (its snapshot row, an insert, an update and a delete of the snapshot row under the default
    replica identity, a tombstone) translates to the events of its own org."""
    orgs, event_ids = set(), []
    for topic in topics:
        outcomes = translated(records(bootstrap, topic, 5), declaration)
        assert pills(outcomes) == [] and skips(outcomes) == {SkipReason.TOMBSTONE: 1}
        events = [draft for _, draft in drafts(outcomes)]
        (org,) = {draft.org_id for draft in events}
        assert sorted((draft.interaction_id, draft.change_op) for draft in events) == [
            ("int-1", "d"), ("int-1", "r"), ("int-1", "u"), ("int-2", "c")]
        orgs.add(org)
        event_ids += [draft.event_id for draft in events]
    assert orgs == {"a", "b"} and len(set(event_ids)) == len(event_ids) == 8


def test_schema_per_tenant_takes_the_org_from_the_schema(
        debezium_connector: Callable[..., DebeziumConnector], kafka_bootstrap: str, postgres_dsn: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    schemas = [f"tenant_{tenant}_{suffix}" for tenant in ("a", "b")]
    try:
        for name in schemas:
            execute(postgres_dsn, f"CREATE SCHEMA {name}")
            create_tenant_table(postgres_dsn, f"{name}.interactions")
        connector = debezium_connector([], extra={"schema.include.list": ",".join(schemas)})
        for name in schemas:
            tenant_changes(postgres_dsn, f"{name}.interactions")
        declaration = declared({"org_id": {"path": "source.schema", "pattern": "^tenant_([^_]+)_"}})
        assert_one_org_per_tenant([connector.topic(name, "interactions") for name in schemas], declaration,
                                  kafka_bootstrap)
    finally:
        execute(postgres_dsn, *(f"DROP SCHEMA IF EXISTS {name} CASCADE" for name in schemas))


@pytest.fixture
def tenant_databases(postgres_dsn: str) -> Iterator[list[str]]:
    """Two databases, `crm_tenant_a_<uid>` and `crm_tenant_b_<uid>`, dropped afterwards. Request it before
    `debezium_connector`: it is then torn down after the connectors, whose replication slots hold a database."""
    suffix = uuid.uuid4().hex[:8]
    names = [f"crm_tenant_{tenant}_{suffix}" for tenant in ("a", "b")]
    execute(postgres_dsn, *(f"CREATE DATABASE {name}" for name in names))
    try:
        yield names
    finally:
        execute(postgres_dsn, *(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)" for name in names))


def test_database_per_tenant_takes_the_org_from_the_database(
        tenant_databases: list[str], debezium_connector: Callable[..., DebeziumConnector], kafka_bootstrap: str,
        postgres_dsn: str) -> None:
    connectors = []
    for database in tenant_databases:
        dsn = make_conninfo(postgres_dsn, dbname=database)
        create_tenant_table(dsn, "public.interactions")
        connectors.append(debezium_connector(["public.interactions"], extra={"database.dbname": database}))
    for database in tenant_databases:
        tenant_changes(make_conninfo(postgres_dsn, dbname=database), "public.interactions")
    declaration = declared({"org_id": {"path": "source.db", "pattern": "^crm_tenant_([^_]+)_"}})
    assert_one_org_per_tenant([connector.topic("public", "interactions") for connector in connectors], declaration,
                              kafka_bootstrap)


def test_the_json_converter_without_schemas_gives_the_same_events(
        schema: str, debezium_connector: Callable[..., DebeziumConnector], kafka_bootstrap: str,
        postgres_dsn: str) -> None:
    """Two connectors on one table, both streaming every change (the snapshot is empty): the same LSNs, so the
    same event ids. Without a schema the decimals must be strings (`decimal.handling.mode=string`); times, dates
    and times of day stay the connector's numbers in the payload, the event time is read by its magnitude."""
    table = f"{schema}.typed"
    execute(postgres_dsn, f"CREATE TABLE {table} ({TYPED})")
    with_schemas = debezium_connector([table], extra={"decimal.handling.mode": "string"})
    without = debezium_connector([table], extra={"decimal.handling.mode": "string",
                                                 "key.converter.schemas.enable": "false",
                                                 "value.converter.schemas.enable": "false"})
    insert_typed(postgres_dsn, table, *TYPED_ROWS)
    execute(postgres_dsn, f"UPDATE {table} SET amount = 99.99 WHERE id = 1", f"DELETE FROM {table} WHERE id = 2")
    results = []
    for connector in (with_schemas, without):
        outcomes = translated(records(kafka_bootstrap, connector.topic(schema, "typed"), 6))
        assert pills(outcomes) == [] and skips(outcomes) == {SkipReason.TOMBSTONE: 1}
        results.append(sorted(drafts(outcomes), key=lambda event: event[1].event_id))
    schemaless = [json.loads(record.value or b"") for record, _ in results[1]]
    assert all("schema" not in value for value in schemaless)
    for (_, draft), (_, plain) in zip(*results, strict=True):
        assert (plain.event_id, plain.org_id, plain.interaction_id, plain.event_type, plain.event_time_ms) == (
            draft.event_id, draft.org_id, draft.interaction_id, draft.event_type, draft.event_time_ms)
        typed, untyped = json.loads(draft.payload), json.loads(plain.payload)
        assert {k: v for k, v in typed.items() if k in ("id", "amount", "ratio")} == {
            k: v for k, v in untyped.items() if k in ("id", "amount", "ratio")}
    events = {(row_id(record), draft.change_op): draft for record, draft in results[1]}
    assert [events[(row, "c")].event_time_ms for row in (1, 2, 3)] == TYPED_EVENT_TIMES
    assert [json.loads(events[(row, "c")].payload)["amount"] for row in (1, 2, 3)] == ["1234.50", "-7.10", "0.05"]
    assert json.loads(events[(1, "u")].payload)["amount"] == "99.99"
    assert (events[(2, "d")].org_id, events[(2, "d")].interaction_id) == ("org-a", "ty-2")
    first = json.loads(events[(1, "c")].payload)
    assert (first["updated_at"], first["due"], first["starts"]) == (1772359200123456, 20513, 36672345678)
    typed_first = json.loads(next(d for r, d in results[0] if (row_id(r), d.change_op) == (1, "c")).payload)
    assert (typed_first["updated_at"], typed_first["due"], typed_first["starts"]) == (
        "2026-03-01T10:00:00.123456", "2026-03-01", "10:11:12.345678")

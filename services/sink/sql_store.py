"""The SQL both sink adapters share: table layout, version-guarded upsert, history, corrections, watermark.

Tables, for `REKEY_SINK_TABLE=<t>`:
- `<t>`: one row per (org_id, interaction_id): its newest event by (event_time, sequence) and `event_count`.
  Upserted with the version guard `WHERE (excluded.event_time, excluded.sequence) > (t.event_time, t.sequence)`,
  so duplicates and late arrivals never overwrite newer state.
- `<t>_events`: append-only history of applied events, keyed by (output_key, sequence); the table rows are a
  function of it (`shared.sink.state.derive_state`), which the audit checks and the repair uses.
- `<t>_corrections`: events older than the watermark (or conflicting with an applied sequence), kept and counted.
- `<t>_rejected`: records that are not usable domain events, with their raw bytes and the reason.
- `rekey_sink_watermarks`: the largest event time seen per table.

SQL is written with `?` placeholders; an adapter provides the connection, transactions and its placeholder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from kafka_rekey.services.sink.store import Rejected, SinkStoreError
from kafka_rekey.shared.sink.events import Interaction, SinkEvent, SourcePosition
from kafka_rekey.shared.sink.plan import BatchPlan, Placement, Stored
from kafka_rekey.shared.sink.state import StateRow, derive_state

EVENT_COLUMNS = (
    "output_key", "sequence", "org_id", "interaction_id", "event_id", "event_type", "interaction_type",
    "event_time", "source_topic", "source_partition", "source_offset", "ordering_token", "change_op", "payload",
)
_EVENT_DDL = """output_key TEXT NOT NULL, sequence BIGINT NOT NULL, org_id TEXT NOT NULL,
    interaction_id TEXT NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL, interaction_type TEXT,
    event_time BIGINT NOT NULL, source_topic TEXT NOT NULL, source_partition INTEGER NOT NULL,
    source_offset BIGINT NOT NULL, ordering_token BIGINT NOT NULL, change_op TEXT, payload TEXT NOT NULL"""
CHUNK = 500
WATERMARKS = "rekey_sink_watermarks"


def event_row(event: SinkEvent) -> tuple[Any, ...]:
    return (
        event.output_key, event.sequence, event.org_id, event.interaction_id, event.event_id, event.event_type,
        event.interaction_type, event.event_time, event.source.topic, event.source.partition,
        event.source.offset, event.ordering_token, event.change_op, event.payload,
    )


def row_event(row: Sequence[Any]) -> SinkEvent:
    return SinkEvent(
        output_key=row[0], sequence=int(row[1]), org_id=row[2], interaction_id=row[3], event_id=row[4],
        event_type=row[5], interaction_type=row[6], event_time=int(row[7]),
        source=SourcePosition(row[8], int(row[9]), int(row[10])), ordering_token=int(row[11]),
        change_op=row[12], payload=row[13],
    )


def _chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _marks(count: int) -> str:
    return ", ".join("?" * count)


def _range(since: int | None, until: int | None) -> tuple[str, list[int]]:
    clauses, params = [], []
    if since is not None:
        clauses.append("event_time >= ?")
        params.append(since)
    if until is not None:
        clauses.append("event_time < ?")
        params.append(until)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class SqlSinkStore:
    """Everything but connecting, transactions and placeholders; see the adapters."""

    blob_type = "BLOB"
    schema_lock: str | None = None
    """A statement that serialises schema creation between processes, where the database needs one."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.events_table = f"{table}_events"
        self.corrections_table = f"{table}_corrections"
        self.rejected_table = f"{table}_rejected"

    # -- adapter hooks -------------------------------------------------------------------------------
    def _transaction(self) -> contextlib.AbstractContextManager[Any]:
        """A context manager yielding a DB-API cursor inside one transaction."""
        raise NotImplementedError

    def _cursor(self) -> contextlib.AbstractContextManager[Any]:
        """A context manager yielding a DB-API cursor outside any explicit transaction (reads)."""
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        return statement

    def close(self) -> None:
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------------------------------
    def _fail(self, action: str, error: Exception) -> SinkStoreError:
        return SinkStoreError(f"sink table {self.table!r}: {action} failed: {type(error).__name__}: {error}")

    def _read(self, action: str, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            with self._cursor() as cursor:
                cursor.execute(self._sql(statement), list(params))
                return list(cursor.fetchall())
        except SinkStoreError:
            raise
        except Exception as error:
            raise self._fail(action, error) from error

    def _q(self, name: str) -> str:
        return f'"{name}"'

    # -- schema --------------------------------------------------------------------------------------
    def ensure_schema(self) -> None:
        t, e, c, r = (self._q(n) for n in (self.table, self.events_table, self.corrections_table,
                                             self.rejected_table))
        statements = [
            f"CREATE TABLE IF NOT EXISTS {t} ({_EVENT_DDL}, event_count BIGINT NOT NULL,"
            f" PRIMARY KEY (org_id, interaction_id))",
            f"CREATE TABLE IF NOT EXISTS {e} ({_EVENT_DDL}, PRIMARY KEY (output_key, sequence))",
            f'CREATE INDEX IF NOT EXISTS "{self.events_table}_interaction" ON {e} (org_id, interaction_id)',
            f'CREATE INDEX IF NOT EXISTS "{self.events_table}_time" ON {e} (event_time)',
            f"CREATE TABLE IF NOT EXISTS {c} ({_EVENT_DDL}, reason TEXT NOT NULL, watermark BIGINT,"
            f" PRIMARY KEY (output_key, sequence, event_id))",
            f"CREATE TABLE IF NOT EXISTS {r} (record_topic TEXT NOT NULL, record_partition INTEGER NOT NULL,"
            f" record_offset BIGINT NOT NULL, record_key {self.blob_type}, record_value {self.blob_type},"
            f" error TEXT NOT NULL, PRIMARY KEY (record_topic, record_partition, record_offset))",
            f"CREATE TABLE IF NOT EXISTS {WATERMARKS} (table_name TEXT PRIMARY KEY, max_event_time BIGINT NOT NULL)",
        ]
        try:
            with self._transaction() as cursor:
                for statement in [self.schema_lock, *statements] if self.schema_lock else statements:
                    cursor.execute(self._sql(statement))
        except Exception as error:
            raise self._fail("creating the tables", error) from error

    # -- reads for the live path ---------------------------------------------------------------------
    def load_watermark(self) -> int | None:
        rows = self._read("reading the watermark",
                          f"SELECT max_event_time FROM {WATERMARKS} WHERE table_name = ?", [self.table])
        return int(rows[0][0]) if rows else None

    def last_sequences(self, keys: Collection[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in _chunks(sorted(keys)):
            marks = _marks(len(chunk))
            rows = self._read(
                "reading the last sequence per key",
                f"SELECT output_key, MAX(sequence) FROM (SELECT output_key, sequence FROM {self._q(self.events_table)}"
                f" WHERE output_key IN ({marks}) UNION ALL SELECT output_key, sequence FROM"
                f" {self._q(self.corrections_table)} WHERE output_key IN ({marks})) AS s GROUP BY output_key",
                [*chunk, *chunk],
            )
            found.update({key: int(sequence) for key, sequence in rows})
        return found

    def stored(self, events: Sequence[SinkEvent]) -> Stored:
        placements: dict[tuple[str, int, str], Placement] = {}
        applied_ids: dict[tuple[str, int], str] = {}
        versions: dict[Interaction, tuple[int, int]] = {}
        keys = sorted({event.output_key for event in events})
        sequences = sorted({event.sequence for event in events})
        for chunk in _chunks(keys):
            for table, placement in ((self.events_table, Placement.APPLIED),
                                     (self.corrections_table, Placement.CORRECTION)):
                rows = self._read(
                    f"reading stored events of {table}",
                    f"SELECT output_key, sequence, event_id FROM {self._q(table)} WHERE output_key IN"
                    f" ({_marks(len(chunk))}) AND sequence IN ({_marks(len(sequences))})",
                    [*chunk, *sequences],
                )
                for key, sequence, event_id in rows:
                    placements[(key, int(sequence), event_id)] = placement
                    if placement is Placement.APPLIED:
                        applied_ids[(key, int(sequence))] = event_id
        interactions = sorted({event.interaction for event in events})
        for chunk in _chunks(interactions):
            rows = self._read(
                "reading the stored versions",
                f"SELECT org_id, interaction_id, event_time, sequence FROM {self._q(self.table)}"
                f" WHERE (org_id, interaction_id) IN (VALUES {', '.join(['(?, ?)'] * len(chunk))})",
                [value for pair in chunk for value in pair],
            )
            versions.update({(org, interaction): (int(time), int(seq)) for org, interaction, time, seq in rows})
        return Stored(placements, applied_ids, versions)

    # -- the write path ------------------------------------------------------------------------------
    def apply(self, plan: BatchPlan, rejected: Sequence[Rejected] = ()) -> None:
        try:
            with self._transaction() as cursor:
                self._write_plan(cursor, plan, rejected)
        except Exception as error:
            raise self._fail(f"applying a batch of {len(plan.history)} events, {len(plan.corrections)} "
                             f"corrections and {len(rejected)} rejected records", error) from error

    def _write_plan(self, cursor: Any, plan: BatchPlan, rejected: Sequence[Rejected]) -> None:
        columns = ", ".join(EVENT_COLUMNS)
        values = _marks(len(EVENT_COLUMNS))
        if plan.history:
            if plan.repair:
                updates = ", ".join(f"{c} = excluded.{c}" for c in EVENT_COLUMNS[2:])
                conflict = f"DO UPDATE SET {updates}"
            else:
                conflict = "DO NOTHING"
            cursor.executemany(self._sql(
                f"INSERT INTO {self._q(self.events_table)} ({columns}) VALUES ({values})"
                f" ON CONFLICT (output_key, sequence) {conflict}"
            ), [event_row(event) for event in plan.history])
        if plan.corrections:
            cursor.executemany(self._sql(
                f"INSERT INTO {self._q(self.corrections_table)} ({columns}, reason, watermark)"
                f" VALUES ({values}, ?, ?) ON CONFLICT (output_key, sequence, event_id) DO NOTHING"
            ), [(*event_row(c.event), c.reason.value, c.watermark) for c in plan.corrections])
        touched = sorted(plan.touched)
        if plan.repair:
            self._rebuild(cursor, touched)
        else:
            if plan.rows:
                self._upsert_rows(cursor, [(event, 0) for event in plan.rows.values()], guarded=True)
            cursor.executemany(self._sql(
                f"UPDATE {self._q(self.table)} SET event_count = (SELECT COUNT(*) FROM {self._q(self.events_table)} e"
                f" WHERE e.org_id = {self._q(self.table)}.org_id"
                f" AND e.interaction_id = {self._q(self.table)}.interaction_id)"
                f" WHERE org_id = ? AND interaction_id = ?"
            ), touched)
        if rejected:
            cursor.executemany(self._sql(
                f"INSERT INTO {self._q(self.rejected_table)} (record_topic, record_partition, record_offset,"
                f" record_key, record_value, error) VALUES (?, ?, ?, ?, ?, ?)"
                f" ON CONFLICT (record_topic, record_partition, record_offset) DO NOTHING"
            ), [(r.topic, r.partition, r.offset, r.key, r.value, r.error) for r in rejected])
        if plan.watermark.max_event_time is not None:
            cursor.execute(self._sql(
                f"INSERT INTO {WATERMARKS} (table_name, max_event_time) VALUES (?, ?) ON CONFLICT (table_name)"
                f" DO UPDATE SET max_event_time = excluded.max_event_time"
                f" WHERE excluded.max_event_time > {WATERMARKS}.max_event_time"
            ), [self.table, plan.watermark.max_event_time])

    def _upsert_rows(self, cursor: Any, rows: Iterable[tuple[SinkEvent, int]], guarded: bool) -> None:
        columns = (*EVENT_COLUMNS, "event_count")
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in ("org_id", "interaction_id"))
        guard = " WHERE (excluded.event_time, excluded.sequence) > (t.event_time, t.sequence)" if guarded else ""
        cursor.executemany(self._sql(
            f"INSERT INTO {self._q(self.table)} AS t ({', '.join(columns)}) VALUES ({_marks(len(columns))})"
            f" ON CONFLICT (org_id, interaction_id) DO UPDATE SET {updates}{guard}"
        ), [(*event_row(event), count) for event, count in rows])

    def _rebuild(self, cursor: Any, interactions: Sequence[Interaction]) -> None:
        for chunk in _chunks(interactions):
            pairs = [value for pair in chunk for value in pair]
            in_pairs = f"(org_id, interaction_id) IN (VALUES {', '.join(['(?, ?)'] * len(chunk))})"
            cursor.execute(self._sql(
                f"SELECT {', '.join(EVENT_COLUMNS)} FROM {self._q(self.events_table)} WHERE {in_pairs}"
            ), pairs)
            rows = derive_state(row_event(row) for row in cursor.fetchall())
            cursor.execute(self._sql(f"DELETE FROM {self._q(self.table)} WHERE {in_pairs}"), pairs)
            self._upsert_rows(cursor, [(r.latest, r.event_count) for r in rows.values()], guarded=False)

    def rebuild_state(self, interactions: Collection[Interaction]) -> None:
        try:
            with self._transaction() as cursor:
                self._rebuild(cursor, sorted(interactions))
        except Exception as error:
            raise self._fail(f"rebuilding {len(interactions)} rows from their history", error) from error

    # -- reads for the audit -------------------------------------------------------------------------
    def _events(self, table: str, since: int | None, until: int | None) -> list[SinkEvent]:
        where, params = _range(since, until)
        rows = self._read(f"reading {table}", f"SELECT {', '.join(EVENT_COLUMNS)} FROM {self._q(table)}{where}",
                          params)
        return [row_event(row) for row in rows]

    def history(self, since: int | None = None, until: int | None = None) -> list[SinkEvent]:
        return self._events(self.events_table, since, until)

    def corrections(self, since: int | None = None, until: int | None = None) -> list[SinkEvent]:
        return self._events(self.corrections_table, since, until)

    def history_of(self, interactions: Collection[Interaction]) -> list[SinkEvent]:
        events: list[SinkEvent] = []
        for chunk in _chunks(sorted(interactions)):
            rows = self._read(
                f"reading {self.events_table}",
                f"SELECT {', '.join(EVENT_COLUMNS)} FROM {self._q(self.events_table)}"
                f" WHERE (org_id, interaction_id) IN (VALUES {', '.join(['(?, ?)'] * len(chunk))})",
                [value for pair in chunk for value in pair],
            )
            events.extend(row_event(row) for row in rows)
        return events

    def state(self, since: int | None = None, until: int | None = None) -> dict[Interaction, StateRow]:
        where, params = _range(since, until)
        rows = self._read(f"reading {self.table}",
                          f"SELECT {', '.join(EVENT_COLUMNS)}, event_count FROM {self._q(self.table)}{where}",
                          params)
        return {(row[2], row[3]): StateRow(row_event(row), int(row[-1])) for row in rows}

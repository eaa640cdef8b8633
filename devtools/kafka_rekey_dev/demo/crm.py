"""The CDC demo's CRM: an `interactions` table in PostgreSQL and a workload of row changes on it, each committed
change written to a manifest in commit order (`shared.checking.cdc.RowChange`), which the check compares with
the domain events.

The table has a surrogate primary key (`id bigserial`), so Debezium keys its changes `{"id": N}`, and the
default REPLICA IDENTITY, so a delete's `before` image carries that key alone. Its `notes` are > 8 KB of text
that does not compress, so PostgreSQL stores them out of line (TOAST) and an update that leaves them alone does
not carry them: Debezium writes its placeholder, rekey names the column under `__unchanged_columns`.

The workload: rows inserted before the connector exists (its snapshot), then inserts, status updates that leave
the notes unchanged, updates that rewrite them, deletes, one transaction of several rows (one row in it created,
updated and deleted), one transaction rolled back (nothing of it may reach Kafka), and one interaction walked
from created through every status to deleted, the one the demo shows.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import psycopg

from kafka_rekey.shared.checking.cdc import RowChange, text_digest

TABLE = "public.interactions"
CREATE_TABLE = """
CREATE TABLE public.interactions (
    id bigserial PRIMARY KEY,
    org_id text NOT NULL,
    interaction_id text NOT NULL,
    status text NOT NULL,
    interaction_type text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    amount numeric(12, 2),
    notes text,
    UNIQUE (org_id, interaction_id)
)"""
ORGS = ("org-acme", "org-globex", "org-initech", "org-umbrella", "org-hooli", "org-soylent")
"""High-volume (64-partition tier), dedicated topic and low tier orgs of the demo catalog's family."""
TYPES = ("call", "chat", "email")
FLOW = ("queued", "ringing", "connected", "on_hold", "connected", "wrap_up", "closed")
NOTES_CHARS = (9_000, 14_000)


@dataclass
class Row:
    id: int
    org_id: str
    interaction_id: str
    status: str
    interaction_type: str
    amount: str
    step: int = 0


@dataclass
class WorkloadSummary:
    snapshot_rows: int = 0
    changes: int = 0
    transactions: int = 0
    rolled_back: int = 0
    """Changes made in the transaction that was rolled back (none of them may reach Kafka)."""
    deletes: int = 0
    showcase: str = ""
    """The `org_id:interaction_id` walked from created to deleted."""
    by_op: dict[str, int] = field(default_factory=dict)

    @property
    def source_records(self) -> int:
        """The records Debezium writes for the committed changes: one each, and a tombstone after each delete."""
        return self.changes + self.deletes


class CrmWorkload:
    """Row changes on the CRM table through one connection; `manifest` gets each committed change, in commit
    order, when its transaction commits."""

    def __init__(self, dsn: str, manifest: IO[str], seed: int = 33) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.manifest = manifest
        self.random = random.Random(seed)
        self.rows: dict[int, Row] = {}
        self.next_interaction = 1
        self.commit = 0
        self.summary = WorkloadSummary()
        self.pending: list[RowChange] = []

    def close(self) -> None:
        self.conn.close()
        self.manifest.close()

    # -- the table --------------------------------------------------------------------------------------
    def create_table(self) -> None:
        self.conn.execute(CREATE_TABLE)

    def toasted(self) -> tuple[int, int]:
        """(rows whose notes are too large to stay in the row even compressed, so are stored out of line, rows)."""
        row = self.conn.execute("SELECT count(*) FILTER (WHERE pg_column_size(notes) > 2032), count(*) "
                                "FROM public.interactions").fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    # -- changes ------------------------------------------------------------------------------------------
    def _notes(self, row: Row, what: str) -> str:
        """Text > 8 KB that pglz cannot shrink below PostgreSQL's TOAST threshold: stored out of line."""
        size = self.random.randint(*NOTES_CHARS)
        lines = [f"{what} for {row.org_id}:{row.interaction_id} ({row.interaction_type})"]
        while sum(map(len, lines)) < size:
            lines.append(f"[{len(lines):04d}] " + self.random.randbytes(48).hex())
        return "\n".join(lines)[:size]

    def _record(self, op: str, row: Row, notes: str | None = None, notes_unchanged: bool = False) -> None:
        columns: dict[str, Any] = {}
        large: dict[str, str | None] = {}
        if op != "d":
            columns = {"org_id": row.org_id, "interaction_id": row.interaction_id, "status": row.status,
                       "interaction_type": row.interaction_type, "amount": row.amount}
            large = {"notes": None if notes_unchanged else text_digest(notes or "")}
        self.pending.append(RowChange(self.commit + 1, op, row.id, row.org_id, row.interaction_id, columns, large))

    def _committed(self) -> None:
        """The transaction of the pending changes committed: write them, in the order they were made."""
        if not self.pending:
            return
        self.commit += 1
        self.summary.transactions += 1
        for change in self.pending:
            self.manifest.write(json.dumps(change.to_json()) + "\n")
            self.summary.changes += 1
            self.summary.by_op[change.op] = self.summary.by_op.get(change.op, 0) + 1
            self.summary.deletes += change.op == "d"
        self.manifest.flush()
        self.pending = []

    def _amount(self) -> str:
        return str(Decimal(self.random.randint(0, 250_000)).scaleb(-2))

    def _insert(self, op: str = "c", org_id: str | None = None) -> Row:
        number = self.next_interaction
        self.next_interaction += 1
        row = Row(0, org_id or self.random.choice(ORGS), f"crm-{number:05d}", FLOW[0],
                  self.random.choice(TYPES), self._amount())
        notes = self._notes(row, "Case notes")
        found = self.conn.execute(
            "INSERT INTO public.interactions (org_id, interaction_id, status, interaction_type, amount, notes) "
            "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            [row.org_id, row.interaction_id, row.status, row.interaction_type, Decimal(row.amount), notes],
        ).fetchone()
        assert found is not None
        row.id = int(found[0])
        self.rows[row.id] = row
        self._record(op, row, notes)
        return row

    def _advance(self, row: Row) -> None:
        """The next status of the row's flow; the notes stay as they are (TOASTed, not in the change)."""
        row.step = min(row.step + 1, len(FLOW) - 1)
        row.status = FLOW[row.step]
        if self.random.random() < 0.3:
            row.amount = self._amount()
        self.conn.execute("UPDATE public.interactions SET status = %s, amount = %s, updated_at = clock_timestamp() "
                          "WHERE id = %s", [row.status, Decimal(row.amount), row.id])
        self._record("u", row, notes_unchanged=True)

    def _rewrite_notes(self, row: Row) -> None:
        notes = self._notes(row, "Rewritten notes")
        self.conn.execute("UPDATE public.interactions SET notes = %s, updated_at = clock_timestamp() WHERE id = %s",
                          [notes, row.id])
        self._record("u", row, notes)

    def _delete(self, row: Row) -> None:
        self.conn.execute("DELETE FROM public.interactions WHERE id = %s", [row.id])
        del self.rows[row.id]
        self._record("d", row)

    def _live(self, *, spare: int | None = None, closed_first: bool = False) -> Row | None:
        candidates = [row for row in self.rows.values() if row.id != spare]
        if closed_first:
            closed = [row for row in candidates if row.status == "closed"]
            candidates = closed or candidates
        else:
            candidates = [row for row in candidates if row.status != "closed"] or candidates
        return self.random.choice(candidates) if candidates else None

    # -- phases -------------------------------------------------------------------------------------------
    def seed_rows(self, count: int) -> None:
        """Rows committed before the connector exists: Debezium's snapshot reads them (op r)."""
        with self.conn.transaction():
            for _ in range(count):
                self._insert("r")
        self._committed()
        self.summary.snapshot_rows = count

    def run(self, inserts: int = 40, updates: int = 110, rewrites: int = 6, deletes: int = 14) -> WorkloadSummary:
        """The streamed changes, in a shuffled order, each its own transaction, with the showcase interaction's
        walk, the multi-row transaction and the rolled-back one among them."""
        showcase = self._insert("c", org_id=ORGS[0])
        self._committed()
        self.summary.showcase = f"{showcase.org_id}:{showcase.interaction_id}"
        plan = ["insert"] * inserts + ["update"] * updates + ["rewrite"] * rewrites + ["delete"] * deletes
        self.random.shuffle(plan)
        walk = len(FLOW) - 1
        for step in range(walk):  # the showcase's statuses, spread over the run; its notes rewritten once
            plan.insert((step + 1) * len(plan) // (walk + 2), "showcase")
        plan.insert(len(plan) // 2, "rewrite-showcase")
        plan.insert(len(plan) * 3 // 5, "transaction")
        plan.insert(len(plan) * 4 // 5, "rollback")
        for action in plan:
            row = None
            if action == "insert":
                self._insert()
            elif action == "update" and (row := self._live(spare=showcase.id)) is not None:
                self._advance(row)
            elif action == "rewrite" and (row := self._live(spare=showcase.id)) is not None:
                self._rewrite_notes(row)
            elif action == "delete" and (row := self._live(spare=showcase.id, closed_first=True)) is not None:
                self._delete(row)
            elif action == "showcase":
                self._advance(showcase)
            elif action == "rewrite-showcase":
                self._rewrite_notes(showcase)
            elif action == "transaction":
                self._transaction(showcase.id)
            elif action == "rollback":
                self._rollback(showcase.id)
            self._committed()
        self._delete(showcase)
        self._committed()
        return self.summary

    def _transaction(self, spare: int) -> None:
        """One transaction over several rows: two inserts (one of them updated and deleted again before the
        commit), updates of three rows, the delete of another."""
        with self.conn.transaction():
            self._insert()
            brief = self._insert()
            self._advance(brief)
            for _ in range(3):
                if (row := self._live(spare=spare)) is not None:
                    self._advance(row)
            self._delete(brief)
            if (row := self._live(spare=spare, closed_first=True)) is not None:
                self._delete(row)

    def _rollback(self, spare: int) -> None:
        """Changes of a transaction that is rolled back: nothing of them is committed, nothing may be seen."""
        saved = dict(self.rows), {row.id: (row.status, row.step, row.amount) for row in self.rows.values()}
        try:
            with self.conn.transaction():
                self._insert()
                if (row := self._live(spare=spare)) is not None:
                    self._advance(row)
                if (row := self._live(spare=spare, closed_first=True)) is not None:
                    self._delete(row)
                raise _RollBack
        except _RollBack:
            pass
        self.summary.rolled_back += len(self.pending)
        self.manifest.write(json.dumps({"kind": "rolled_back", "changes": len(self.pending)}) + "\n")
        self.pending = []
        self.rows = saved[0]
        for row in self.rows.values():
            row.status, row.step, row.amount = saved[1][row.id]


class _RollBack(Exception):
    """Raised inside a transaction block to roll it back."""


def prepare_workload(dsn: str, manifest: Path, before_connector: int) -> CrmWorkload:
    """Create the table and its first rows (the snapshot's); the caller registers the connector, then calls
    `run` on the returned workload and closes it."""
    workload = CrmWorkload(dsn, manifest.open("w"))
    workload.create_table()
    workload.seed_rows(before_connector)
    return workload

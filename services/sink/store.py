"""The `SinkStore` protocol the sink and the reconciler write and read through (`databases.open_store` opens one).

Adapters: PostgreSQL (psycopg 3; production and tests) and SQLite (the embedded default for the demo). Both
share the SQL in `sql_store.py`. Event times are stored as epoch milliseconds (BIGINT).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka_rekey.shared.sink.events import Interaction, SinkEvent
from kafka_rekey.shared.sink.plan import BatchPlan, Stored
from kafka_rekey.shared.sink.state import StateRow


class SinkStoreError(RuntimeError):
    """The database refused or lost a sink operation; the message names the table and the operation."""


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that is not a usable domain event, kept with its raw bytes and the reason."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    error: str


class SinkStore(Protocol):
    table: str

    def ensure_schema(self) -> None:
        """Create the state, history, corrections, rejected and watermark tables if missing."""

    def load_watermark(self) -> int | None:
        """The largest event time this table has seen, or None."""

    def last_sequences(self, keys: Collection[str]) -> dict[str, int]:
        """Highest stored sequence (history or corrections) per output key; absent keys have none."""

    def stored(self, events: Sequence[SinkEvent]) -> Stored:
        """What is already stored for these events' slots and interactions (input of `plan_batch`)."""

    def apply(self, plan: BatchPlan, rejected: Sequence[Rejected] = ()) -> None:
        """Write the plan and the rejected records in one transaction (all or nothing)."""

    def history(self, since: int | None = None, until: int | None = None) -> list[SinkEvent]:
        """Applied events with event time in [since, until)."""

    def corrections(self, since: int | None = None, until: int | None = None) -> list[SinkEvent]:
        """Events in the corrections table with event time in [since, until)."""

    def history_of(self, interactions: Collection[Interaction]) -> list[SinkEvent]:
        """Every applied event of these interactions."""

    def state(self, since: int | None = None, until: int | None = None) -> dict[Interaction, StateRow]:
        """Table rows whose event time is in [since, until)."""

    def rebuild_state(self, interactions: Collection[Interaction]) -> None:
        """Rewrite these interactions' rows from their history (deleting rows that have none)."""

    def close(self) -> None: ...

"""SQLite adapter of the sink store: the embedded default for the demo (one file, one writer)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from kafka_rekey.services.sink.sql_store import SqlSinkStore


class SqliteSinkStore(SqlSinkStore):
    def __init__(self, path: str, table: str) -> None:
        super().__init__(table)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        cursor = self._conn.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        try:
            yield cursor
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        else:
            cursor.execute("COMMIT")
        finally:
            cursor.close()

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[sqlite3.Cursor]:
        cursor = self._conn.cursor()
        try:
            yield cursor
        finally:
            cursor.close()

    def close(self) -> None:
        self._conn.close()

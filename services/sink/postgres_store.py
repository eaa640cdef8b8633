"""PostgreSQL adapter of the sink store (psycopg 3): production and the tests.

The connection is opened lazily and dropped after any error, so the next attempt reconnects.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg

from kafka_rekey.services.sink.sql_store import SqlSinkStore


class PostgresSinkStore(SqlSinkStore):
    blob_type = "BYTEA"
    # The sink and the reconciler start together on one database; concurrent CREATE TABLE IF NOT EXISTS of one
    # table fails in PostgreSQL (unique violation in pg_type), so the schema is created under a lock.
    schema_lock = "SELECT pg_advisory_xact_lock(hashtext('rekey sink schema'))"

    def __init__(self, dsn: str, table: str) -> None:
        super().__init__(table)
        self.dsn = dsn
        self._conn: psycopg.Connection | None = None

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        return self._conn

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[psycopg.Cursor]:
        try:
            conn = self._connection()
            with conn.transaction(), conn.cursor() as cursor:
                yield cursor
        except BaseException:
            self._drop_broken()
            raise

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[psycopg.Cursor]:
        try:
            with self._connection().cursor() as cursor:
                yield cursor
        except BaseException:
            self._drop_broken()
            raise

    def _drop_broken(self) -> None:
        if self._conn is not None and (self._conn.closed or self._conn.broken):
            self._conn = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

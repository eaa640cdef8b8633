"""The embedded PostgreSQL: initdb as an unprivileged user, durable across stop + start, logical decoding on,
clear port errors."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from kafka_rekey_dev.embedded.errors import PortInUse
from kafka_rekey_dev.embedded.postgres import PostgresServer, free_port

pytestmark = pytest.mark.postgres


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rekey-pg-test-"))  # /tmp: traversable by the server's user
    yield path
    PostgresServer(path).stop()
    shutil.rmtree(path, ignore_errors=True)


def test_start_stop_start_keeps_rows_and_reports_status(data_dir: Path) -> None:
    server = PostgresServer(data_dir, port=free_port(57432))
    server.start()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (id int)")
        conn.execute("INSERT INTO kept VALUES (7)")
    status = server.status()
    assert status["accepting"] is True and status["port"] == server.port
    assert (data_dir / f".s.PGSQL.{server.port}").exists()  # the socket lives in the data dir
    server.stop()
    assert PostgresServer(data_dir).status()["running"] is False

    again = PostgresServer(data_dir)  # another process would read the port from server.json the same way
    again.start()
    with psycopg.connect(again.dsn) as conn:
        assert conn.execute("SELECT id FROM kept").fetchall() == [(7,)]
        assert conn.execute("SHOW wal_level").fetchone() == ("logical",)  # for Debezium, on every start


def test_port_in_use_is_a_clear_error(postgres_dsn: str, data_dir: Path) -> None:
    port = psycopg.conninfo.conninfo_to_dict(postgres_dsn).get("port")
    if port is None:
        pytest.skip("the session server's port is not in its DSN")
    with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is in use"):
        PostgresServer(data_dir, port=int(port)).start(timeout=10)

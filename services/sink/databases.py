"""`open_store(url)`: the sink store adapter for a database URL (PostgreSQL or SQLite)."""

from __future__ import annotations

from kafka_rekey.services.sink.store import SinkStore


def open_store(url: str, table: str) -> SinkStore:
    """The adapter for `url`: `postgresql://...` (or a libpq `key=value` conninfo), or `sqlite:///relative/path`,
    `sqlite:////absolute/path`, `sqlite://` (in memory)."""
    if url.startswith(("postgresql://", "postgres://")) or "=" in url.split("://", 1)[0]:
        from kafka_rekey.services.sink.postgres_store import PostgresSinkStore

        return PostgresSinkStore(url, table)
    if url == "sqlite://" or url.startswith("sqlite:///"):
        from kafka_rekey.services.sink.sqlite_store import SqliteSinkStore

        return SqliteSinkStore(url.removeprefix("sqlite:///") if url != "sqlite://" else ":memory:", table)
    raise ValueError(f"unsupported sink database URL {url.split('://', 1)[0]!r}://...: use postgresql://... or "
                     f"sqlite:///path (REKEY_SINK_DATABASE_URL)")

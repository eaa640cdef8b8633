"""Local table state that exactly-once can trust after a crash.

A RocksDB table store is written while an event is processed, before the transaction carrying the same writes
to the changelog commits. After a kill -9 the store can hold writes of transactions that were then aborted:
counters and dedupe entries of events whose outputs never became visible, numbered in an order that the
re-processing need not repeat. Kafka Streams wipes such a store when its task did not close cleanly, and so does
this: a worker marks its state directory clean only after a clean stop, and under exactly-once a directory
without the mark is removed before the worker starts, so the tables are restored from the committed changelog.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import structlog

CLEAN_MARK = "clean-shutdown"

_log = structlog.get_logger(__name__)


def open_state_directory(path: Path, exactly_once: bool) -> None:
    """Prepare `path` for a starting worker: wiped first if exactly-once and the last stop was not clean."""
    mark = path / CLEAN_MARK
    if exactly_once and path.exists() and not mark.exists():
        _log.warning("local table state not closed cleanly; restoring it from the changelog", path=str(path))
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    mark.unlink(missing_ok=True)


def mark_clean(path: Path) -> None:
    """Record that the worker stopped cleanly: its final commit covered every write in the local store."""
    (path / CLEAN_MARK).touch()

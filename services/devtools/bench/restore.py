"""`rekey bench acl --only restore`: a worker's cold restore after the ACL has left 1,000,000+ state keys.

The pipeline re-keys its backlog like the others; then its data directory is deleted, as a rescheduled pod's
`emptyDir` is, and the same worker is started again: it rebuilds every table from the changelogs before it reads
ready. Measured: the seconds from the process start to ready and those of the restore itself, the changelog
records applied (both from the worker's "state restored" log lines) and read (its
`rekey_restore_read_records_total`), the live keys the restore left in the stores (records read per key), the
`sequences` changelog's records ever written against those compaction left (what a restore read before the
changelogs were compacted, and now), and the restoring worker's peak RSS beside the steady peak of the worker
that built the state.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from confluent_kafka import Consumer, KafkaError, TopicPartition
from rich.console import Console

from services.runtime.state import RocksStore, rocks_options

READY_TIMEOUT = 900.0
STATE_RESTORED = "state restored"


class RestoringWorker(Protocol):
    name: str
    log_path: Path
    env: dict[str, str]

    def start(self, ready_timeout: float = ...) -> object: ...

    def peak_rss_mb(self) -> float: ...

    def metrics(self) -> str: ...

    def stop(self) -> None: ...


def cold_restore(worker: Callable[[], RestoringWorker], data_dir: Path, steady_rss_mb: float,
                 console: Console) -> dict[str, float]:
    """Delete `data_dir`, start `worker()` on it and measure its restore until ready (the module doc)."""
    shutil.rmtree(data_dir, ignore_errors=True)
    restoring = worker()
    restored_before = _restored_lines(restoring.log_path)
    with console.status(f"cold start of {restoring.name} on an empty data directory ..."):
        started = time.monotonic()
        restoring.start(READY_TIMEOUT)
        seconds = time.monotonic() - started
        try:
            peak_rss_mb = restoring.peak_rss_mb()
            read = _sample(restoring.metrics(), "rekey_restore_read_records_total")
        finally:
            restoring.stop()
    restored = _restored_lines(restoring.log_path)[len(restored_before):]
    applied = sum(int(str(line["changelog_records"])) for line in restored)
    restoring_seconds = sum(float(str(line["seconds"])) for line in restored)
    keys = live_keys(data_dir)
    sequences = f"{restoring.env['REKEY_APP_ID']}-sequences-changelog"
    written, present = changelog_records(restoring.env["REKEY_KAFKA_BOOTSTRAP_SERVERS"], sequences)
    sequence_keys = live_keys(data_dir, "sequences")
    figures = {
        "restore_seconds": round(seconds, 2),
        "restore_records_per_s": round(applied / seconds),
        "restore_worker_seconds": round(restoring_seconds, 2),
        "restore_changelog_records": applied,
        "restore_changelog_offsets_read": round(read),
        "restore_keys": keys,
        "restore_records_per_key": round(applied / keys, 2) if keys else 0.0,
        "sequences_changelog_written": written,
        "sequences_changelog_present": present,
        "sequences_keys": sequence_keys,
        "restore_peak_rss_mb": round(peak_rss_mb),
        "restore_steady_rss_mb": round(steady_rss_mb),
    }
    console.print(f"[green]✓[/] cold restore: {applied:,} changelog records ({read:,.0f} offsets) for {keys:,} keys "
                  f"in {seconds:.2f}s = {figures['restore_records_per_s']:,} records/s, peak RSS "
                  f"{peak_rss_mb:,.0f} MB (steady {steady_rss_mb:,.0f} MB); sequences changelog: {written:,} "
                  f"records written, {present:,} left by compaction, for {sequence_keys:,} keys")
    return figures


def live_keys(data_dir: Path, table: str = "*") -> int:
    """Keys held by the RocksDB stores of `table` (all) under `data_dir`, less each store's changelog-offset
    key."""
    options = rocks_options(16)
    total = 0
    for current in sorted(data_dir.rglob(f"{table}/*/CURRENT")):
        store = RocksStore(current.parent, options)
        try:
            keys = store.db.iter()
            keys.seek_to_first()
            while keys.valid():
                total += 1
                keys.next()
            total -= store.changelog_offset() > 0
        finally:
            store.close()
    return total


def changelog_records(bootstrap: str, topic: str, idle: float = 5.0) -> tuple[int, int]:
    """(records ever written to `topic`, records it holds now): every change of every key against what the log
    cleaner has left of them."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-restore-{uuid.uuid4().hex[:8]}",
                       "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        partitions = reader.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        reader.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
        left, present = {p for p, end in ends.items() if end > 0}, 0
        deadline = time.monotonic() + idle
        while left and time.monotonic() < deadline:
            for message in reader.consume(10_000, timeout=0.5):
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    left.discard(message.partition())
                elif error is None:
                    present += 1
                    deadline = time.monotonic() + idle
        return sum(ends.values()), present
    finally:
        reader.close()


def _restored_lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    lines = []
    for line in log.read_text(errors="replace").splitlines():
        if STATE_RESTORED in line and line.startswith("{"):
            record = json.loads(line)
            if record.get("event") == STATE_RESTORED:
                lines.append(record)
    return lines


def _sample(metrics: str, name: str) -> float:
    """The value of the unlabelled sample `name` in a Prometheus text exposition (0 when absent)."""
    for line in metrics.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


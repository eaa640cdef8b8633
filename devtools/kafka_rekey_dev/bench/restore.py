"""`rekey bench acl --only restore`: a worker's cold restore after the ACL has left 1,000,000+ state keys.

The pipeline re-keys its backlog like the others; then its data directory is deleted, as a rescheduled pod's
`emptyDir` is, and the same worker is started again: it rebuilds every table from the changelogs before it reads
ready. Measured: the seconds from the process start to ready and those of the restore itself, the changelog
records applied (both from the worker's "state restored" log lines) and read (its
`rekey_restore_read_records_total`), the live keys the restore left in the stores (records read per key), the
`sequences` changelog's records ever written, those left right after the fill and those left once the log
cleaner has had its pass, and the restoring worker's peak RSS beside the steady peak of the worker that built the
state.

The cleaner compacts closed segments only, and a changelog's segment being written rolls on the first write after
its `segment.ms`: a fill of a few minutes leaves most of a partition in its active segment, where a deployment an
hour on has it compacted. Before the cold start the bench stands in for that hour (`let_the_cleaner_run`): it rolls
every compacted changelog partition's segment with one tombstone of a key no table holds (applied by the restore
like any tombstone: one record a partition) and waits, bounded, until the broker's cleaner checkpoint has passed it.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from rich.console import Console

from kafka_rekey.services.runtime.state import RocksStore, rocks_options

READY_TIMEOUT = 900.0
STATE_RESTORED = "state restored"
CLEANER_TIMEOUT = 120.0
SEGMENT_ROLL_KEY = b"\x00rekey:bench:segment-roll"
"""The key of the tombstone that rolls a changelog's segment: no table holds it."""


class RestoringWorker(Protocol):
    name: str
    log_path: Path
    env: dict[str, str]

    def start(self, ready_timeout: float = ...) -> object: ...

    def peak_rss_mb(self) -> float: ...

    def metrics(self) -> str: ...

    def stop(self) -> None: ...


def cold_restore(worker: Callable[[], RestoringWorker], data_dir: Path, steady_rss_mb: float,
                 broker_log_dirs: list[Path], console: Console) -> dict[str, float]:
    """Let the log cleaner compact the changelogs, delete `data_dir`, start `worker()` on it and measure its restore
    until ready (the module doc)."""
    shutil.rmtree(data_dir, ignore_errors=True)
    restoring = worker()
    bootstrap, app_id = restoring.env["REKEY_KAFKA_BOOTSTRAP_SERVERS"], restoring.env["REKEY_APP_ID"]
    sequences = f"{app_id}-sequences-changelog"
    _, uncleaned = changelog_records(bootstrap, sequences)
    with console.status("rolling the changelogs' segments and waiting for the log cleaner ..."):
        cleaner_seconds, uncleaned_partitions = let_the_cleaner_run(bootstrap, app_id, broker_log_dirs)
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
    written, present = changelog_records(bootstrap, sequences)
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
        "sequences_changelog_uncleaned": uncleaned,
        "sequences_changelog_present": present,
        "cleaner_seconds": round(cleaner_seconds, 1),
        "cleaner_partitions_left": uncleaned_partitions,
        "sequences_keys": sequence_keys,
        "restore_peak_rss_mb": round(peak_rss_mb),
        "restore_steady_rss_mb": round(steady_rss_mb),
    }
    console.print(f"[green]✓[/] cold restore: {applied:,} changelog records ({read:,.0f} offsets) for {keys:,} keys "
                  f"in {seconds:.2f}s = {figures['restore_records_per_s']:,} records/s, peak RSS "
                  f"{peak_rss_mb:,.0f} MB (steady {steady_rss_mb:,.0f} MB); sequences changelog: {written:,} "
                  f"records written, {uncleaned:,} after the fill, {present:,} after the cleaner's pass "
                  f"({cleaner_seconds:.0f}s, {uncleaned_partitions} partitions left uncleaned), "
                  f"for {sequence_keys:,} keys")
    return figures


def let_the_cleaner_run(bootstrap: str, app_id: str, log_dirs: list[Path], timeout: float = CLEANER_TIMEOUT
                        ) -> tuple[float, int]:
    """Roll the active segment of every non-empty compacted changelog partition of `app_id` (its topic's
    `segment.ms` set to 1 ms for one tombstone of `SEGMENT_ROLL_KEY`, then set back) and wait, for `timeout` at
    most, until the cleaner checkpoints of the broker's `log_dirs` show each partition compacted up to it, or its
    uncleaned share under its topic's `min.cleanable.dirty.ratio` (the cleaner leaves it so in a deployment too);
    return the seconds waited and the partitions still due for cleaning then."""
    started = time.monotonic()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    named = [name for name in admin.list_topics(timeout=10).topics
             if name.startswith(f"{app_id}-") and name.endswith("-changelog")]
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, name) for name in named])
    # The cleaner never touches a changelog that expires instead (`seen`): waiting for it would wait the timeout out.
    configs = {resource.name: config for resource, future in described.items()
               if "compact" in (config := future.result(30))["cleanup.policy"].value}
    changelogs = sorted(configs)
    segment_ms = {name: config["segment.ms"].value for name, config in configs.items()}
    dirty_ratio = {name: float(config["min.cleanable.dirty.ratio"].value) for name, config in configs.items()}
    _set_segment_ms(admin, {name: "1" for name in changelogs})
    try:
        rolled = _roll_segments(bootstrap, changelogs, log_dirs, started + timeout)
    finally:
        _set_segment_ms(admin, segment_ms)
    while True:
        cleaned = _cleaner_checkpoints(log_dirs)
        behind = sum(cleaned.get(where, -1) < offset
                     and _dirty_share(log_dirs, *where, cleaned.get(where, 0)) >= dirty_ratio[where[0]]
                     for where, offset in rolled.items())
        if not behind or time.monotonic() > started + timeout:
            return time.monotonic() - started, behind
        time.sleep(1.0)


def _set_segment_ms(admin: AdminClient, values: dict[str, str]) -> None:
    changes = [ConfigResource(ResourceType.TOPIC, name, incremental_configs=[
        ConfigEntry("segment.ms", value, incremental_operation=AlterConfigOpType.SET)])
        for name, value in values.items()]
    for future in admin.incremental_alter_configs(changes).values():
        future.result(30)


def _roll_segments(bootstrap: str, changelogs: list[str], log_dirs: list[Path], deadline: float
                   ) -> dict[tuple[str, int], int]:
    """Append the roll tombstone to each non-empty partition of `changelogs` until its newest segment starts at
    it (the lowered `segment.ms` reaches the broker a moment after the controller took it); return the offsets of
    those tombstones."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-roll-{uuid.uuid4().hex[:8]}"})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    try:
        left = set()
        for topic in changelogs:
            for partition in reader.list_topics(topic, timeout=10).topics[topic].partitions:
                if reader.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1] > 0:
                    left.add((topic, partition))
        rolled: dict[tuple[str, int], int] = {}
        delivered: list[tuple[KafkaError | None, Message]] = []
        while left:
            delivered.clear()
            for topic, partition in left:
                producer.produce(topic, None, SEGMENT_ROLL_KEY, partition,
                                 on_delivery=lambda error, message: delivered.append((error, message)))
            producer.flush(30)
            offsets = {}
            for error, message in delivered:
                if error is not None:
                    raise RuntimeError(f"segment roll record to {message.topic()}[{message.partition()}]: {error}")
                offsets[(str(message.topic()), int(message.partition() or 0))] = int(message.offset() or 0)
            for where, offset in offsets.items():
                if _newest_segment(log_dirs, *where) == offset:
                    rolled[where] = offset
                    left.discard(where)
            if left and time.monotonic() > deadline:
                raise TimeoutError(f"{len(left)} changelog partitions did not roll their segment, e.g. {min(left)}")
            if left:
                time.sleep(0.5)
        return rolled
    finally:
        reader.close()


def _newest_segment(log_dirs: list[Path], topic: str, partition: int) -> int:
    """The base offset of the partition's active segment, from its files in the broker's log dirs (-1: not found)."""
    bases = [int(log.stem) for log_dir in log_dirs for log in (log_dir / f"{topic}-{partition}").glob("*.log")]
    return max(bases, default=-1)


def _dirty_share(log_dirs: list[Path], topic: str, partition: int, cleaned: int) -> float:
    """The share of the partition's closed segments' bytes at or past the cleaner's checkpoint `cleaned`."""
    sizes = sorted((int(log.stem), log.stat().st_size) for log_dir in log_dirs
                   for log in (log_dir / f"{topic}-{partition}").glob("*.log"))[:-1]
    total = sum(size for _, size in sizes)
    return sum(size for base, size in sizes if base >= cleaned) / total if total else 0.0


def _cleaner_checkpoints(log_dirs: list[Path]) -> dict[tuple[str, int], int]:
    """Where the log cleaner has compacted each partition up to, from the broker's `cleaner-offset-checkpoint`
    files (a version line, a count line, then `topic partition offset` lines)."""
    cleaned: dict[tuple[str, int], int] = {}
    for log_dir in log_dirs:
        checkpoint = log_dir / "cleaner-offset-checkpoint"
        if checkpoint.exists():
            for line in checkpoint.read_text().splitlines()[2:]:
                topic, partition, offset = line.split()
                cleaned[(topic, int(partition))] = int(offset)
    return cleaned


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


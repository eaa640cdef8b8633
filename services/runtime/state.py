"""Per-key state of one input partition: tables backed by a local store (RocksDB via rocksdict, or memory) and a
compacted changelog topic whose partition N belongs to input partition N.

Between checkpoints a table's changes sit in `pending`; a checkpoint writes one changelog record per changed
key, then (once outputs and offsets are committed) the local store. Every stored and changelogged value is
msgpack `[input_offset, *value]`: the offset of the input record whose processing it reflects. Restoring
applies a changelog record only when that offset is below the partition's committed input offset (state equals
committed input) and not below the offset of the value already held (a late write of a fenced worker cannot
take a key's state back).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import msgspec
import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

log = structlog.get_logger()

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[Any]).decode
_CHANGELOG_OFFSET = b"\x00rekey:changelog-offset"
RESTORE_PROGRESS_EVERY = 5.0


class Store(Protocol):
    def get(self, key: bytes) -> bytes | None: ...

    def write(self, changes: dict[bytes, bytes | None], changelog_offset: int) -> None: ...

    def changelog_offset(self) -> int: ...

    def close(self) -> None: ...

    def wipe(self) -> None: ...


class MemoryStore:
    """State held in memory only: restored from the changelog's start on every assignment."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.offset = 0

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def write(self, changes: dict[bytes, bytes | None], changelog_offset: int) -> None:
        for key, value in changes.items():
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        self.offset = changelog_offset

    def changelog_offset(self) -> int:
        return self.offset

    def close(self) -> None:
        """Nothing to release."""

    def wipe(self) -> None:
        self.data.clear()
        self.offset = 0


class RocksStore:
    """State in a local RocksDB directory that survives restarts: only the changelog's tail is restored."""

    def __init__(self, path: Path) -> None:
        from rocksdict import Options, Rdict

        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._options = Options(raw_mode=True)
        self.db = Rdict(str(path), self._options)

    def get(self, key: bytes) -> bytes | None:
        value = self.db.get(key)
        return None if value is None else bytes(value)

    def write(self, changes: dict[bytes, bytes | None], changelog_offset: int) -> None:
        from rocksdict import WriteBatch

        batch = WriteBatch(raw_mode=True)
        for key, value in changes.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        batch.put(_CHANGELOG_OFFSET, str(changelog_offset).encode())
        self.db.write(batch)

    def changelog_offset(self) -> int:
        value = self.db.get(_CHANGELOG_OFFSET)
        return 0 if value is None else int(value)

    def close(self) -> None:
        self.db.close()

    def wipe(self) -> None:
        from rocksdict import Rdict

        self.db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self.db = Rdict(str(self.path), self._options)


_MISSING = object()


def input_offset(value: bytes | None) -> int:
    """The input offset a stored or changelogged value reflects (-1 for none)."""
    return -1 if value is None else int(_decode(value)[0])


def fold_changelog(records: Iterable[tuple[bytes, bytes | None]], committed_input: int,
                   stored: Callable[[bytes], bytes | None], changes: dict[bytes, bytes | None]) -> int:
    """Fold changelog records (in changelog order) into `changes` over the `stored` values; return how many
    were applied. A record is applied only if the input it reflects is committed (`< committed_input`) and not
    older than the value already held for its key: state equals committed input, and a fenced worker's late
    write cannot take a key back."""
    applied = 0
    for key, value in records:
        tag = input_offset(value)
        if tag >= committed_input:
            continue
        held = changes[key] if key in changes else stored(key)
        if value is not None and tag < input_offset(held):
            continue
        changes[key] = value
        applied += 1
    return applied


class Table:
    """One changelogged key -> value table of one input partition."""

    def __init__(self, name: str, changelog: str, partition: int, store: Store) -> None:
        self.name = name
        self.changelog = changelog
        self.partition = partition
        self.store = store
        self.pending: dict[bytes, bytes | None] = {}

    def get(self, key: bytes) -> list[Any] | None:
        raw = self.pending.get(key, _MISSING)
        if raw is _MISSING:
            raw = self.store.get(key)
        return None if raw is None else _decode(raw)[1:]  # type: ignore[arg-type]

    def put(self, key: bytes, value: list[Any], offset: int) -> None:
        """Set `key` to `value` as of processing the input record at `offset`."""
        self.pending[key] = _encode([offset, *value])

    def restore(self, reader: Consumer, committed_input: int) -> int:
        """Bring the local store up to the changelog's end; return how many changelog records were applied."""
        tp = TopicPartition(self.changelog, self.partition)
        low, high = reader.get_watermark_offsets(tp, timeout=30)
        start = self.store.changelog_offset()
        if start > high:
            log.warning("local state is ahead of its changelog (topic recreated?): rebuilding it",
                        changelog=self.changelog, partition=self.partition, local=start, changelog_end=high)
            self.store.wipe()
            start = 0
        start = max(start, low)
        if start >= high:
            return 0
        reader.assign([TopicPartition(self.changelog, self.partition, start)])
        changes: dict[bytes, bytes | None] = {}
        applied = 0
        next_progress = time.monotonic() + RESTORE_PROGRESS_EVERY
        try:
            done = False
            while not done:
                records = []
                for message in reader.consume(10_000, timeout=0.5):
                    error = message.error()
                    if error is not None:
                        if error.code() != KafkaError._PARTITION_EOF:
                            raise KafkaException(error)
                        done = done or message.offset() >= high  # past any trailing transaction marker
                        continue
                    done = done or message.offset() >= high - 1
                    records.append((message.key(), message.value()))
                applied += fold_changelog(records, committed_input, self.store.get, changes)
                if time.monotonic() > next_progress:
                    next_progress = time.monotonic() + RESTORE_PROGRESS_EVERY
                    log.info("restoring state", changelog=self.changelog, partition=self.partition,
                             applied=applied, end=high)
        finally:
            reader.unassign()
        self.store.write(changes, high)
        return applied

    def persist(self, changelog_offset: int | None) -> None:
        """Write the committed changes to the local store, with the changelog offset they reach (if known)."""
        self.store.write(self.pending, self.store.changelog_offset() if changelog_offset is None else changelog_offset)
        self.pending = {}

    def discard(self) -> None:
        self.pending = {}

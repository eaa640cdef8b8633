"""Per-key state of one input partition: tables backed by a local store (RocksDB via rocksdict, or memory) and a
compacted changelog topic whose partition N belongs to input partition N.

Between checkpoints a table's changes sit in `pending`; a checkpoint writes one changelog record per changed
key, then (once outputs and offsets are committed) the local store, a slice at a time between batches. A batched
table (keys only ever added, e.g. dedupe memory that expires with its changelog's retention) writes a
checkpoint's changes in a few records of up to `GROUPED_RECORD_BYTES` each instead, under keys of their own: one
changelog record per event would double the broker writes of the sequence stage; a chunk's key carries an
input offset none of its entries exceeds, so that a restore takes a chunk of committed input whole, without a fold
per entry. A restore reads both shapes.
Every stored and changelogged value is msgpack `[input_offset, *value]`: the offset of the input record whose
processing it reflects. Restoring applies a changelog record only when that offset is below the partition's
committed input offset (state equals committed input) and not below the offset of the value already held (a late
write of a fenced worker cannot take a key's state back).

A table may keep the stored values of its recently used keys in memory (`recent_keys`): those read from the
store and those a checkpoint wrote to it. Only stored values are kept, so an aborted checkpoint, which discards
what it had not committed, leaves nothing stale behind.
"""

from __future__ import annotations

import math
import shutil
import time
import uuid
from collections import deque
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec
import numpy as np
import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from prometheus_client import Counter, Gauge

log = structlog.get_logger()
T = TypeVar("T")

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[Any]).decode
_decode_chunk = msgspec.msgpack.Decoder(list[tuple[bytes, bytes]]).decode
_CHANGELOG_OFFSET = b"\x00rekey:changelog-offset"
DELETED = b"\xc0"
"""A deleted key's pending value (`Table.delete`): a tombstone in the changelog, a delete in the store. Compared
by identity: no stored value is this very object."""
_CHUNK_PREFIX = b"\x00rekey:changes:"
_CHUNK_TOP_BYTES = 8
"""A chunk's key: the prefix, an input offset none of its entries exceeds (big-endian; absent in chunks of earlier
releases), a random id."""
_CHUNK_ID_BYTES = 16
GROUPED_RECORD_BYTES = 256 * 1024
"""The size at most of a record carrying many items (a batched table's changelog record, the ACL's internal
records of envelopes; `encode_grouped`), unless one item alone is larger: well under the broker's 1 MB limit."""
_FRAMING = 11  # msgpack bytes around one change in a chunk at most: a 2-array, two bin32 headers
RESTORE_PROGRESS_EVERY = 5.0
RESTORE_WRITE_EVERY = 100_000
RESTORE_WRITE_BYTES = 16 * 1024 * 1024
"""A restore writes what it has folded to the local store once it holds this many changes or about this many
changelog bytes, checked after each chunk of a batched table too (one chunk carries many changes), not a whole
changelog tail held in memory: what one write batch and the memtable it lands in hold is bounded by these."""
RESTORE_HELD_RECORDS = 10_000
RESTORE_HELD_BYTES = 4 * 1024 * 1024
"""A restore takes at most this many changelog records, and about this many bytes of them (a batched table's chunks
are large), from those the consumer has fetched at a time: records taken wait for their fold in Python's memory,
beyond the consumer's prefetch."""
RESTORE_REMAINING = Gauge("rekey_restore_remaining_records",
                          "Changelog records the restores under way have still to read (0: no restore runs).")
RESTORE_READ = Counter("rekey_restore_read_records_total", "Changelog records read by restores.")


class RestoreProgress:
    """The changelog records of the process's restores under way: to read and read, for the metrics above and the
    readiness probe's answer (an operator sees a restore advance, not a worker that hangs)."""

    def __init__(self) -> None:
        self.to_read = self.read = 0
        self.advanced_at = time.monotonic()
        """When a restore was last about to start or read records (the liveness probe's stall check)."""

    def preparing(self) -> None:
        """A restore is about to start (its committed offsets and changelog ends asked first): its stall clock
        starts now."""
        self.advanced_at = time.monotonic()

    def started(self, records: int) -> None:
        if not self.to_read - self.read:  # a new restore: count from it
            self.to_read = self.read = 0
        self.to_read += records
        RESTORE_REMAINING.inc(records)

    def advanced(self, records: int) -> None:
        self.read += records
        if records:
            self.advanced_at = time.monotonic()
        RESTORE_READ.inc(records)
        RESTORE_REMAINING.dec(records)

    def ended(self, unread: int) -> None:
        """A restore ended with `unread` records it did not need (trailing transaction markers) or could not read."""
        self.to_read -= unread
        RESTORE_REMAINING.dec(unread)

    def describe(self) -> str:
        return f"restoring state: {self.read:,} of {self.to_read:,} changelog records read"


RESTORE_PROGRESS = RestoreProgress()


def encode_grouped(items: list[T], encode: Callable[[list[T]], bytes], size: int | None = None) -> list[bytes]:
    """`items` encoded in order into values of at most `GROUPED_RECORD_BYTES` (one item alone may be larger), in
    even slices sized from their encoded `size` (about; all of them are encoded first to know it when not given),
    each split again if still too large. C-speed encoding of whole slices, not a Python loop that sizes each item,
    which stopped the loop at every checkpoint."""
    if size is None or size <= GROUPED_RECORD_BYTES:
        whole = encode(items)
        if len(whole) <= GROUPED_RECORD_BYTES or len(items) == 1:
            return [whole]
        size = len(whole)
    slices = min(len(items), -(-size * 5 // (GROUPED_RECORD_BYTES * 4)))  # aiming at 80% of the bound
    step = -(-len(items) // slices)
    return [value for start in range(0, len(items), step)
            for value in encode_grouped(items[start:start + step], encode)]


class Store(Protocol):
    def get(self, key: bytes) -> bytes | None: ...

    def write(self, changes: dict[bytes, bytes | None], changelog_offset: int) -> None: ...

    def changelog_offset(self) -> int: ...

    def is_empty(self) -> bool: ...

    def scan(self, after: bytes, count: int) -> list[tuple[bytes, bytes]]:
        """Up to `count` stored keys after `after`, in key order, with their values."""
        ...

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
            if value is None or value is DELETED:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        self.offset = changelog_offset

    def changelog_offset(self) -> int:
        return self.offset

    def is_empty(self) -> bool:
        return not self.data and not self.offset

    def scan(self, after: bytes, count: int) -> list[tuple[bytes, bytes]]:
        return sorted((key, value) for key, value in self.data.items() if key > after)[:count]

    def close(self) -> None:
        """Nothing to release."""

    def wipe(self) -> None:
        self.data.clear()
        self.offset = 0


def rocks_options(memory_mb: int) -> Any:
    """RocksDB options shared by every store of a process: one LRU block cache, and memtables charged to it, so
    all stores together stay within `memory_mb` (RocksDB's defaults give each store 64 MB memtables of its own;
    a worker holds two stores per input partition).

    No compression and universal compaction, as Kafka Streams' RocksDBStore: the values are small msgpack arrays
    (little to compress) and the stores take a write per change, so the background compactions are the cost, CPU
    that the broker and the worker's loop share on a small node; this halves it (docs/BENCHMARKS.md)."""
    from rocksdict import BlockBasedOptions, Cache, DBCompactionStyle, DBCompressionType, Options, WriteBufferManager

    budget = memory_mb * 1024 * 1024
    cache = Cache(budget)
    table = BlockBasedOptions()
    table.set_block_cache(cache)
    table.set_bloom_filter(10, False)
    options = Options(raw_mode=True)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_manager(WriteBufferManager.new_write_buffer_manager_with_cache(budget // 2, False, cache))
    options.set_write_buffer_size(min(8 * 1024 * 1024, budget // 8))
    options.set_max_write_buffer_number(2)
    options.set_compression_type(DBCompressionType.none())
    options.set_compaction_style(DBCompactionStyle.universal())
    return options


class RocksStore:
    """State in a local RocksDB directory that survives restarts: only the changelog's tail is restored."""

    def __init__(self, path: Path, options: Any = None) -> None:
        """`options`: `rocks_options(...)` shared with the process's other stores (a small default otherwise)."""
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._options = options if options is not None else rocks_options(16)
        self.db = self._open()

    def get(self, key: bytes) -> bytes | None:
        value = self.db.get(key)
        return None if value is None else bytes(value)

    def write(self, changes: dict[bytes, bytes | None], changelog_offset: int) -> None:
        from rocksdict import WriteBatch

        batch = WriteBatch(raw_mode=True)
        values = changes.values()
        if None in values or DELETED in values:
            for key, value in changes.items():
                if value is None or value is DELETED:
                    batch.delete(key)
                else:
                    batch.put(key, value)
        else:  # the puts driven from C, not a Python loop: a restore writes every entry through here
            deque(map(batch.put, changes.keys(), values), maxlen=0)
        batch.put(_CHANGELOG_OFFSET, str(changelog_offset).encode())
        self.db.write(batch)

    def changelog_offset(self) -> int:
        value = self.db.get(_CHANGELOG_OFFSET)
        return 0 if value is None else int(value)

    def is_empty(self) -> bool:
        keys = self.db.iter()
        keys.seek_to_first()
        return not keys.valid()

    def scan(self, after: bytes, count: int) -> list[tuple[bytes, bytes]]:
        items = self.db.iter()
        items.seek(after + b"\x00")
        found: list[tuple[bytes, bytes]] = []
        while items.valid() and len(found) < count:
            if items.key() != _CHANGELOG_OFFSET:
                found.append((items.key(), items.value()))
            items.next()
        return found

    def close(self) -> None:
        self.db.close()

    def wipe(self) -> None:
        self.db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self.db = self._open()

    def _open(self) -> Any:
        """Open the store with our options, an existing one too. Given options alone, rocksdict opens an existing
        store's column families with the options saved in it, which cannot hold the shared cache: each store then
        had a block cache of its own and memtables outside the budget."""
        from rocksdict import Rdict

        return Rdict(str(self.path), self._options, column_families={"default": self._options})


def changelog_ends(watermarks: Consumer, partitions: Iterable[tuple[str, int]],
                   timeout: float = 30.0) -> dict[tuple[str, int], int]:
    """Where each changelog partition ends: its high watermark, committed or not, as a read_uncommitted consumer
    (`watermarks`) sees it.

    A changelog read with read_committed is complete only there. Its last stable offset lags while a transaction
    is open, and for a moment after one commits (the coordinator writes the commit markers after it has answered
    the producer): a restore that stopped at it missed the previous owner's last checkpoint while the committed
    input offsets (fetched as stable) already included it. A consumer, not the AdminClient: after a leader was
    killed the AdminClient's ListOffsets kept answering FENCED_LEADER_EPOCH from a stale leader, then left its
    futures unanswered (a worker hung restoring). Raises `KafkaException` when the partitions cannot all say
    within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    ends: dict[tuple[str, int], int] = {}
    for topic, partition in partitions:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"changelog ends unknown after {timeout:.0f}s"))
        _, high = watermarks.get_watermark_offsets(TopicPartition(topic, partition), timeout=remaining, cached=False)
        ends[(topic, partition)] = high
    return ends


def input_offset(value: bytes | None) -> int:
    """The input offset a stored or changelogged value reflects (-1 for none)."""
    return -1 if value is None else int(_decode(value)[0])


def changelog_entries(key: bytes, value: bytes | None) -> list[tuple[bytes, bytes | None]]:
    """The changes one changelog record carries: its own key and value, or a batched table's chunk of them."""
    if value is not None and key.startswith(_CHUNK_PREFIX):
        return list(_decode_chunk(value))
    return [(key, value)]


def fold_changelog(records: Iterable[tuple[bytes, bytes | None]], committed_input: int,
                   stored: Callable[[bytes], bytes | None], changes: dict[bytes, bytes | None]) -> int:
    """Fold changelog records (in changelog order) into `changes` over the `stored` values; return how many
    were applied. A record is applied only if the input it reflects is committed (`< committed_input`) and not
    older than the value already held for its key: state equals committed input, and a fenced worker's late
    write cannot take a key back."""
    window = RestoreWindow(committed_input)
    window.add(records)
    changes.update(window.settle(stored))
    return window.applied


class RestoreWindow:
    """The changelog records a restore folds in memory between two writes to the local store.

    Folded without the store: a key's value is its last record with the highest input offset since its last
    tombstone, which is what `fold_changelog`'s rule gives over any stored value unless the stored one is newer.
    That is settled once per key when the window is written (`settle`), not once per record: a store read costs
    more than folding a record."""

    def __init__(self, committed_input: int) -> None:
        self.committed_input = committed_input
        self.changes: dict[bytes, bytes | None] = {}
        self.reset: set[bytes] = set()
        """Keys tombstoned in this window: what follows their tombstone does not depend on the store."""
        self.applied = 0

    def add(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        changes, committed, applied = self.changes, self.committed_input, 0
        for key, value in records:
            if value is None:
                changes[key] = None
                self.reset.add(key)
                applied += 1
                continue
            tag = input_offset(value)
            if tag >= committed:
                continue
            held = changes.get(key)
            if held is not None and tag < input_offset(held):
                continue
            changes[key] = value
            applied += 1
        self.applied += applied

    def add_chunk(self, key: bytes, value: bytes) -> None:
        """A batched table's chunk record (`Table.changelog_messages`). When its key says that all its entries are
        committed input, those of keys not yet in the window are taken as they are, with C-speed dict operations,
        not folded one by one: for them the fold's rule has nothing to compare (the settle still compares them
        with the store)."""
        entries = _decode_chunk(value)
        chunk, top = dict(entries), _chunk_top(key)
        if top is None or top >= self.committed_input or len(chunk) != len(entries):
            self.add(entries)
            return
        held = chunk.keys() & self.changes.keys()
        if held:
            self.add([(held_key, chunk.pop(held_key)) for held_key in held])
        self.changes.update(chunk)
        self.applied += len(chunk)

    def settle(self, stored: Callable[[bytes], bytes | None] | None,
               written: WrittenKeys | None = None) -> dict[bytes, bytes | None]:
        """The window's changes less those older than the `stored` value of their key (None: the store holds
        none of them; `written`: it holds only keys among these)."""
        if stored is None:
            return self.changes
        changes = self.changes
        candidates = changes if written is None else written.among(changes)
        for key in [key for key in candidates if (value := changes[key]) is not None and key not in self.reset
                    and (held := stored(key)) is not None and input_offset(value) < input_offset(held)]:
            del changes[key]
            self.applied -= 1
        return changes


class WrittenKeys:
    """The keys a restore into an empty store has written so far, as a Bloom filter (one bit per key, from
    Python's `hash`, in a fixed array of many bits per key a partition holds): only those can have a stored value
    to settle against, so a cold restore reads the store for them and the rare false positive, not for every
    key. numpy, not a Python loop: a loop over the keys' bits cost as much as the store writes."""

    BITS = 1 << 27

    def __init__(self) -> None:
        self.bits = np.zeros(self.BITS >> 3, dtype=np.uint8)
        self.count = 0

    def _slots(self, keys: Collection[bytes]) -> Any:
        return np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys)) & (self.BITS - 1)

    def add(self, keys: Collection[bytes]) -> None:
        slots = self._slots(keys)
        np.bitwise_or.at(self.bits, slots >> 3, np.left_shift(1, slots & 7).astype(np.uint8))
        self.count += len(keys)

    def among(self, keys: Collection[bytes]) -> list[bytes]:
        """Those of `keys` that may have been written."""
        slots = self._slots(keys)
        hits = np.flatnonzero((self.bits[slots >> 3] >> (slots & 7)) & 1)
        if not len(hits):
            return []
        ordered = list(keys)
        return [ordered[index] for index in hits.tolist()]



class _Restoring:
    """One table's restore under way in `restore_tables`."""

    def __init__(self, table: Table, committed_input: int, start: int, high: int, written: WrittenKeys | None
                 ) -> None:
        self.table, self.committed_input, self.start, self.high = table, committed_input, start, high
        self.position = start
        self.window = RestoreWindow(committed_input)
        self.written = written
        """Of the keys written by this restore (all tables' in one filter), when the store was empty; None: the
        store held state before, so every key settles against it."""
        self.wrote = False
        self.applied = 0

    def write(self, changelog_offset: int) -> None:
        """The window to the store (the changelog offset only at the end), then a new window."""
        store = self.table.store
        window, self.window = self.window, RestoreWindow(self.committed_input)
        changes = window.settle(None if self.written is not None and not self.wrote else store.get, self.written)
        store.write(changes, changelog_offset)
        if self.written is not None:
            self.written.add(changes)
        self.wrote = True
        self.applied += window.applied


def restore_tables(reader: Consumer, tables: list[tuple[Table, int, int]]) -> int:
    """Bring each (table, committed input offset, changelog end `high` from `changelog_ends`) up to its end, all of
    them through `reader` at once; return how many changelog records were applied. An open transaction below
    `high` (a fenced worker's, until it is aborted) is waited for: what it holds may be committed.

    All the partitions are read together, not one after another: one at a time, the restore waited for each
    partition's first fetch and for every fetch the folding had caught up with."""
    restoring: dict[tuple[str, int], _Restoring] = {}
    written: WrittenKeys | None = None
    for table, committed_input, high in tables:
        low, _ = reader.get_watermark_offsets(TopicPartition(table.changelog, table.partition), timeout=30)
        start = table.store.changelog_offset()
        if start > high:
            log.warning("local state is ahead of its changelog (topic recreated?): rebuilding it",
                        changelog=table.changelog, partition=table.partition, local=start, changelog_end=high)
            table.store.wipe()
            start = 0
        start = max(start, low)
        if start >= high:
            continue
        empty = table.store.is_empty()
        if empty and written is None:
            written = WrittenKeys()
        restoring[(table.changelog, table.partition)] = _Restoring(table, committed_input, start, high,
                                                                   written if empty else None)
    if not restoring:
        return 0
    RESTORE_PROGRESS.started(sum(r.high - r.start for r in restoring.values()))
    reader.assign([TopicPartition(changelog, partition, r.start) for (changelog, partition), r in restoring.items()])
    left = set(restoring)
    per_consume = RESTORE_HELD_RECORDS
    next_progress = time.monotonic() + RESTORE_PROGRESS_EVERY
    counted = sum(r.position for r in restoring.values())
    held = 0  # changelog bytes folded since the windows' last write, less this consume's `size`
    try:
        while left:
            # what the consumer has fetched, or else its next record: a consume that waits for `per_consume`
            # records takes what it fetches meanwhile too, up to that many chunks of a batched table
            messages = reader.consume(per_consume, timeout=0) or reader.consume(1, timeout=0.5)
            records: dict[_Restoring, list[tuple[bytes, bytes | None]]] = {}
            size = 0
            for message in messages:
                where = (message.topic(), message.partition())
                into = restoring.get(where)  # type: ignore[arg-type]
                if into is None or where not in left:
                    continue
                offset = message.offset()
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(error)
                    if offset >= into.high:  # past any trailing transaction marker
                        _finished(reader, left, where, into)
                    continue
                if offset >= into.high:  # written since its end was looked up: not this restore's
                    _finished(reader, left, where, into)
                    continue
                key, value = message.key(), message.value()
                size += len(value or b"")
                if into.table.batched and value is not None and key.startswith(_CHUNK_PREFIX):
                    before = records.pop(into, None)
                    if before:
                        into.window.add(before)
                    into.window.add_chunk(key, value)
                    if held + size >= RESTORE_WRITE_BYTES or _held_changes(restoring) >= RESTORE_WRITE_EVERY:
                        _write_windows(restoring, records)
                        held = -size
                else:
                    records.setdefault(into, []).append((key, value))
                if offset + 1 > into.position:
                    into.position = offset + 1
                if offset >= into.high - 1:
                    _finished(reader, left, where, into)
            if messages:
                per_consume = max(1, min(RESTORE_HELD_RECORDS, RESTORE_HELD_BYTES * len(messages) // max(size, 1)))
            del messages
            for into, batch in records.items():
                into.window.add(batch)
            del records
            counted = _count_read(restoring.values(), counted)
            held += size
            if held >= RESTORE_WRITE_BYTES or _held_changes(restoring) >= RESTORE_WRITE_EVERY:
                _write_windows(restoring, {})
                held = 0
            if time.monotonic() > next_progress:
                next_progress = time.monotonic() + RESTORE_PROGRESS_EVERY
                log.info("restoring state", partitions=len(restoring), partitions_left=len(left),
                         read=sum(r.position - r.start for r in restoring.values()),
                         to_read=sum(r.high - r.start for r in restoring.values()))
    finally:
        # librdkafka keeps a partition paused (`_finished`) through unassign and assign: the next restore of it
        # would never be fetched
        reader.resume([TopicPartition(*where) for where in restoring])
        reader.unassign()
        _count_read(restoring.values(), counted)
        RESTORE_PROGRESS.ended(sum(r.high - r.position for r in restoring.values()))
    for into in restoring.values():
        into.write(into.high)
    return sum(r.applied for r in restoring.values())


def _held_changes(restoring: dict[tuple[str, int], _Restoring]) -> int:
    return sum(len(r.window.changes) for r in restoring.values())


def _write_windows(restoring: dict[tuple[str, int], _Restoring],
                   records: dict[_Restoring, list[tuple[bytes, bytes | None]]]) -> None:
    """Fold the `records` taken and not yet folded (emptied), then write every window under its store's changelog
    offset as it was: a restore cut off meanwhile starts over from there."""
    for into, batch in records.items():
        into.window.add(batch)
    records.clear()
    for into in restoring.values():
        if into.window.changes:
            into.write(into.table.store.changelog_offset())


def _chunk_top(key: bytes) -> int | None:
    """An input offset none of a chunk's entries exceeds, from its key (None: a chunk of an earlier release)."""
    if len(key) != len(_CHUNK_PREFIX) + _CHUNK_TOP_BYTES + _CHUNK_ID_BYTES:
        return None
    return int.from_bytes(key[len(_CHUNK_PREFIX):len(_CHUNK_PREFIX) + _CHUNK_TOP_BYTES], "big", signed=True)


def _finished(reader: Consumer, left: set[tuple[str, int]], where: tuple[str, int], restoring: _Restoring) -> None:
    """One partition read to its end: fetched no further."""
    left.discard(where)
    reader.pause([TopicPartition(*where)])
    restoring.position = restoring.high  # past trailing transaction markers, if any


def _count_read(restoring: Iterable[_Restoring], counted: int) -> int:
    """Count the changelog records read since `counted` (the sum of the positions last counted) in the restore
    progress; return the sum counted now. Once per consume, not per record: a metric update costs more than a
    record's fold."""
    position = sum(r.position for r in restoring)
    if position > counted:
        RESTORE_PROGRESS.advanced(position - counted)
    return position


class Table:
    """One changelogged key -> value table of one input partition."""

    def __init__(self, name: str, changelog: str, partition: int, store: Store, batched: bool = False,
                 recent_keys: int = 0) -> None:
        """`batched`: changelog records carry many keys' changes; `recent_keys`: how many stored values to keep in
        memory at most (see the module doc)."""
        self.name = name
        self.batched = batched
        self.recent_keys = recent_keys
        self.recent: dict[bytes, bytes] = {}
        """Stored values of recently used keys, forgotten all at once when `recent_keys` is reached: cheaper than
        keeping an order, and a key still in use is back after its next read."""
        self.changelog = changelog
        self.partition = partition
        self.store = store
        self.pending: dict[bytes, bytes] = {}
        """Changes since the last checkpoint, as stored: key -> msgpack `[input_offset, *value]`. Encoded as they
        are put, not at the checkpoint: one bytes object per change holds a third of the memory of a tuple and a
        list, and the checkpoint, which stops the loop, has nothing left to encode."""
        self.committing: dict[bytes, bytes] = {}
        """The changes of a checkpoint under way (`seal`), read until they are persisted or discarded."""
        self.deleting = self.committing_deletes = False
        """Whether `pending` / `committing` hold a deleted key (`delete`)."""
        self.highest_offset = -1
        """The highest input offset put so far, at least that of any change a checkpoint writes: a batched table's
        chunks carry it, so that a restore takes a chunk of committed input without a fold per entry."""
        self.unwritten: list[tuple[bytes, bytes]] = []
        """Committed changes queued for the local store (`queue_persist`), written from `written` on."""
        self.written = 0
        self.unwritten_end: int | None = None
        self.end_recorded = True
        """Whether the local store records where the changelog ends (False once a checkpoint wrote changes without
        it): a final checkpoint looks the end up, so that the next owner restores nothing already stored."""

    def get(self, key: bytes) -> list[Any] | None:
        raw = self.pending.get(key) or self.committing.get(key) or self.recent.get(key) or self._stored(key)
        return None if raw is None or raw is DELETED else _decode(raw)[1:]  # type: ignore[no-any-return]

    def _stored(self, key: bytes) -> bytes | None:
        raw = self.store.get(key)
        if raw is not None and self.recent_keys:
            self._remember({key: raw})
        return raw

    def _remember(self, stored: dict[bytes, bytes]) -> None:
        if len(self.recent) + len(stored) > self.recent_keys:
            self.recent.clear()
            if len(stored) > self.recent_keys:
                return
        self.recent.update(stored)

    def put(self, key: bytes, value: list[Any], offset: int) -> None:
        """Set `key` to `value` as of processing the input record at `offset`."""
        self.pending[key] = _encode([offset, *value])
        if offset > self.highest_offset:
            self.highest_offset = offset

    def delete(self, key: bytes) -> None:
        """Forget `key` (a tombstone in the changelog). Not for a batched table, whose keys are only added."""
        self.pending[key] = DELETED
        self.deleting = True

    def scan(self, after: bytes, count: int) -> list[tuple[bytes, list[Any]]]:
        """Up to `count` keys of the local store after `after` in key order with their stored values; keys changed
        since (pending or committing) are left out, their state is in use."""
        return [(key, _decode(raw)[1:]) for key, raw in self.store.scan(after, count)
                if key not in self.pending and key not in self.committing]

    def seal(self) -> dict[bytes, bytes]:
        """Start committing the pending changes: return them (key -> stored value); they stay readable (as
        `committing`) until `persist` or `discard`, and later changes pend anew. The previous checkpoint's
        changes still queued for the store are written first."""
        self.persist_rest()
        self.committing, self.pending = self.pending, {}
        self.committing_deletes, self.deleting = self.deleting, False
        return self.committing

    def changelog_messages(self, records: dict[bytes, bytes]) -> Collection[tuple[bytes, bytes | None]]:
        """The (key, value) records a checkpoint produces to the changelog for `records` (what `seal` returned; not
        changed until they are all produced)."""
        if not self.batched:
            if self.committing_deletes:
                return [(key, None if value is DELETED else value) for key, value in records.items()]
            return records.items()
        size = sum(map(len, records)) + sum(map(len, records.values())) + _FRAMING * len(records)
        top = self.highest_offset.to_bytes(_CHUNK_TOP_BYTES, "big", signed=True)
        return [(_CHUNK_PREFIX + top + uuid.uuid4().bytes, chunk)
                for chunk in encode_grouped(list(records.items()), _encode, size)]

    def restore(self, reader: Consumer, committed_input: int, high: int) -> int:
        """Bring the local store up to the changelog's end `high` (`changelog_ends`); return how many changelog
        records were applied (`restore_tables` with this table alone)."""
        return restore_tables(reader, [(self, committed_input, high)])

    def persist(self, records: dict[bytes, bytes], changelog_offset: int | None) -> None:
        """Write the committed changes (what `seal` returned) to the local store, with the changelog offset they
        reach (if known)."""
        self.queue_persist(records, changelog_offset)
        self.persist_rest()

    def queue_persist(self, records: dict[bytes, bytes], changelog_offset: int | None) -> None:
        """Queue the committed changes (what `seal` returned) for the local store, to be written a slice at a time
        (`persist_slice`, `persist_share`) while the loop goes on: a RocksDB write holds the GIL, 1-3 us a change.
        They stay readable as `committing` until all are written; the changelog offset goes with the last slice."""
        self.persist_rest()
        self.unwritten, self.written, self.unwritten_end = list(records.items()), 0, changelog_offset
        if not self.unwritten:  # nothing to write but the offset
            if changelog_offset is not None:
                self.store.write({}, changelog_offset)
            self._persisted()

    def persist_slice(self, count: int) -> int:
        """Write up to `count` queued changes to the local store; return how many are still queued."""
        if not self.unwritten:
            return 0
        start, self.written = self.written, min(self.written + count, len(self.unwritten))
        left = len(self.unwritten) - self.written
        end = self.unwritten_end if left == 0 and self.unwritten_end is not None else self.store.changelog_offset()
        written = dict(self.unwritten[start:self.written])
        self.store.write(written, end)
        if self.recent_keys:
            self._remember(written)
        if left == 0:
            self._persisted()
        return left

    def persist_share(self, share: float) -> int:
        """Write queued changes until `share` (0 to 1) of them are written; return how many are still queued."""
        due = math.ceil(len(self.unwritten) * share) - self.written
        return self.persist_slice(due) if due > 0 else len(self.unwritten) - self.written

    def persist_rest(self) -> None:
        """Write every queued change now."""
        self.persist_slice(len(self.unwritten))

    def _persisted(self) -> None:
        """What was queued is written."""
        if self.unwritten_end is not None:
            self.end_recorded = True
        elif self.unwritten:
            self.end_recorded = False
        self.committing, self.unwritten, self.written = {}, [], 0

    def discard(self) -> None:
        """Forget every uncommitted change, pending or being committed. Committed changes still queued for the
        store are written first: they are committed input."""
        self.persist_rest()
        self.pending, self.committing = {}, {}
        self.deleting = self.committing_deletes = False

    def close(self) -> None:
        """Write what is queued and close the store."""
        self.persist_rest()
        self.store.close()

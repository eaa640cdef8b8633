"""State recovery without a broker: which changelog records a restore applies, and the stores' round trip."""

from __future__ import annotations

from pathlib import Path

import httpx
import msgspec
import pytest

from kafka_rekey.services.observability.http import HealthServer
from kafka_rekey.services.runtime.state import (
    GROUPED_RECORD_BYTES,
    MemoryStore,
    RestoreProgress,
    RestoreWindow,
    RocksStore,
    Store,
    Table,
    WrittenKeys,
    changelog_entries,
    fold_changelog,
    rocks_options,
)
from kafka_rekey.services.runtime.topics import changelog_config, expiring_changelog_config


def _value(table: Table, value: list[object], offset: int) -> bytes:
    table.put(b"probe", value, offset)
    record = table.pending[b"probe"]
    table.discard()
    return record


def _restored(records: list[tuple[bytes, bytes | None]], committed: int, stored: dict[bytes, bytes]) -> dict:
    changes: dict[bytes, bytes | None] = {}
    fold_changelog(records, committed, stored.get, changes)
    table = Table("t", "t-changelog", 0, MemoryStore())
    table.store.write({**stored, **changes}, 0)
    return {key: table.get(key) for key in {*stored, *changes}}


@pytest.fixture
def table() -> Table:
    return Table("sequences", "g-sequences-changelog", 3, MemoryStore())


def test_state_is_restored_up_to_the_committed_input_and_no_further(table: Table) -> None:
    """Crash after the changelog of a checkpoint was written but before its offsets were committed."""
    records = [(b"k", _value(table, [1], 10)), (b"k", _value(table, [2], 20)), (b"k", _value(table, [3], 30))]
    assert _restored(records, committed=31, stored={}) == {b"k": [3]}
    assert _restored(records, committed=21, stored={}) == {b"k": [2]}
    assert _restored(records, committed=5, stored={}) == {}


def test_a_fenced_workers_late_write_does_not_take_a_key_back(table: Table) -> None:
    """Worker A paused mid-checkpoint; B took over and moved on; A's changelog write lands after B's."""
    b_wrote, a_late = _value(table, [7], 70), _value(table, [5], 50)
    assert _restored([(b"k", b_wrote), (b"k", a_late)], committed=80, stored={}) == {b"k": [7]}
    assert _restored([(b"k", a_late)], committed=80, stored={b"k": b_wrote}) == {b"k": [7]}


def test_a_restore_reapplying_what_the_local_store_holds_changes_nothing(table: Table) -> None:
    held = _value(table, [4], 40)
    assert _restored([(b"k", held), (b"j", _value(table, [1], 41))], committed=50,
                     stored={b"k": held}) == {b"k": [4], b"j": [1]}


def test_a_restore_window_settles_against_the_store_once_per_key_as_the_record_by_record_rule_does(
        table: Table) -> None:
    """Folded without the store, then settled per key: the same state as applying each record over the stored
    value, a tombstone included (what follows it does not depend on the store)."""
    stored = {b"newer": _value(table, [9], 90), b"older": _value(table, [1], 10), b"gone": _value(table, [5], 50)}
    records = [(b"newer", _value(table, [3], 30)), (b"newer", _value(table, [4], 40)),
               (b"older", _value(table, [2], 20)), (b"gone", None), (b"gone", _value(table, [6], 45)),
               (b"fresh", _value(table, [1], 60)), (b"fresh", _value(table, [0], 55))]
    reads: list[bytes] = []

    def read(key: bytes) -> bytes | None:
        reads.append(key)
        return stored.get(key)

    window = RestoreWindow(committed_input=100)
    window.add(records)
    settled = window.settle(read)
    assert settled == {b"older": records[2][1], b"gone": records[4][1], b"fresh": records[5][1]}
    assert sorted(reads) == [b"fresh", b"newer", b"older"], "one store read per key, none for a tombstoned one"
    assert _restored(records, committed=100, stored=stored) == {b"newer": [9], b"older": [2], b"gone": [6],
                                                                  b"fresh": [1]}


def test_a_cold_restore_reads_the_store_only_for_keys_it_has_written() -> None:
    """The filter never misses a written key; an unwritten one is rarely taken for written."""
    written = WrittenKeys()
    keys = [f"org-{n % 40}:{n}".encode() for n in range(100_000)]
    written.add(keys)
    assert written.among(keys) == keys
    false_positives = len(written.among([f"org-{n % 40}:{n}|other".encode() for n in range(100_000)]))
    assert false_positives < 300


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_a_store_knows_whether_it_holds_anything(kind: str, tmp_path: Path) -> None:
    store: Store = MemoryStore() if kind == "memory" else RocksStore(tmp_path / "s" / "0")
    assert store.is_empty()
    store.write({}, 12)
    assert not store.is_empty(), "a store that records a changelog offset is not a cold one"
    store.close()


def test_changelogs_are_compacted_in_small_segments_and_the_dedupe_memory_expires_uncompacted() -> None:
    """A restore reads about one record per live key only if the log cleaner gets to the changelog's segments."""
    compacted, expiring = changelog_config(), expiring_changelog_config(retention_ms=7_200_000)
    assert compacted["cleanup.policy"] == "compact" and "retention.ms" not in compacted
    assert int(compacted["segment.bytes"]) <= 16 * 1024 * 1024 and float(compacted["min.cleanable.dirty.ratio"]) < 0.5
    assert compacted["min.compaction.lag.ms"] == "0", "a broker-wide compaction lag would leave closed segments dirty"
    assert int(compacted["delete.retention.ms"]) >= 86_400_000, "a tombstone outlives a store offline for a day"
    assert (expiring["cleanup.policy"], expiring["retention.ms"]) == ("delete", "7200000"), \
        "chunks are each written once: compacting them removes nothing and costs the broker a copy per pass"
    assert int(expiring["segment.ms"]) <= 7_200_000, "a segment past the horizon must be deletable"


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_pending_changes_are_read_back_before_and_after_persisting(kind: str, tmp_path: Path) -> None:
    store: Store = MemoryStore() if kind == "memory" else RocksStore(tmp_path / "seen" / "0")
    table = Table("seen", "g-seen-changelog", 0, store)
    table.put(b"a", [1, "src/0/1"], 1)
    assert (table.get(b"a"), store.get(b"a")) == ([1, "src/0/1"], None)
    records = table.seal()
    assert (table.get(b"a"), table.pending, store.get(b"a")) == ([1, "src/0/1"], {}, None)
    table.persist(records, changelog_offset=12)
    assert (table.get(b"a"), store.changelog_offset(), table.committing) == ([1, "src/0/1"], 12, {})
    table.put(b"a", [2, "src/0/2"], 2)
    table.discard()
    assert table.get(b"a") == [1, "src/0/1"]
    if kind == "rocksdb":
        store.close()
        reopened = RocksStore(tmp_path / "seen" / "0")
        assert (Table("seen", "c", 0, reopened).get(b"a"), reopened.changelog_offset()) == ([1, "src/0/1"], 12)
        reopened.close()


def test_a_batched_table_changelogs_a_checkpoint_in_few_records_that_restore_every_change() -> None:
    """The dedupe memory gains a key per event: its changes travel in chunks, each applied by the usual rules."""
    table = Table("seen", "g-seen-changelog", 0, MemoryStore(), batched=True)
    for offset in range(20_000):
        table.put(f"org-acme:{offset % 97}|event-{offset}".encode(), [offset // 97 + 1, f"src/0/{offset}"], offset)
    records = dict(table.pending)
    messages = list(table.changelog_messages(records))
    assert 1 < len(messages) < len(records) // 1000
    assert all(len(value) < GROUPED_RECORD_BYTES + 1024 for _key, value in messages)
    assert len({key for key, _value in messages}) == len(messages), "a chunk's key is its own"
    legacy = (b"org-acme:1|event-old", _value(Table("seen", "c", 0, MemoryStore()), [1, "src/0/0"], 5))
    entries = [entry for key, value in [legacy, *messages] for entry in changelog_entries(key, value)]
    assert len(entries) == len(records) + 1
    restored = _restored(entries, committed=15_000, stored={})
    assert len(restored) == 15_000 + 1
    assert restored[b"org-acme:3|event-100"] == [2, "src/0/100"]
    assert b"org-acme:61|event-15000" not in restored, "a change past the committed input was applied"


@pytest.mark.parametrize("committed", [20_000, 12_000, 1_000], ids=["all-committed", "partly", "none"])
def test_a_chunk_of_committed_input_is_taken_whole_into_a_restore_window_as_the_fold_takes_it(
        table: Table, committed: int) -> None:
    """A chunk's entries skip the per-entry fold only where it would take them as they are: the window's held
    keys (a newer, an older and a tombstoned one) and a chunk past the committed input are folded."""
    writer = Table("seen", "g-seen-changelog", 0, MemoryStore(), batched=True)
    for offset in range(1_000, 13_000):
        writer.put(f"org-acme:{offset % 97}|event-{offset}".encode(), [1, f"src/0/{offset}"], offset)
    newer = _value(table, [9], 1_500)
    held = [(b"org-acme:30|event-1000", newer), (b"org-acme:31|event-1001", _value(table, [2], 900)),
            (b"org-acme:32|event-1002", None), (b"org-acme:33|event-1003", _value(table, [3], 20_001))]
    earlier_release = (b"\x00rekey:changes:" + bytes(16),  # a chunk without an offset in its key
                       msgspec.msgpack.encode([(b"org-acme:1|event-old", _value(table, [1], 5))]))
    messages = [*writer.changelog_messages(writer.pending), earlier_release]
    assert len(messages) > 2
    whole, folded = RestoreWindow(committed), RestoreWindow(committed)
    for window in (whole, folded):
        window.add(held)
    for key, value in messages:
        whole.add_chunk(key, value)
        folded.add(changelog_entries(key, value))
    assert (whole.changes, whole.reset, whole.applied) == (folded.changes, folded.reset, folded.applied)
    assert len(whole.changes) == {20_000: 12_001, 12_000: 11_001, 1_000: 3}[committed]
    if committed > 1_500:
        assert whole.changes[b"org-acme:30|event-1000"] is newer, "a held key's newer value was overwritten"


def test_a_per_key_table_changelogs_one_record_per_changed_key(table: Table) -> None:
    table.put(b"a", [1], 1)
    table.put(b"b", [4], 2)
    records = dict(table.pending)
    assert list(table.changelog_messages(records)) == list(records.items())
    assert changelog_entries(b"a", records[b"a"]) == [(b"a", records[b"a"])]


def test_changes_made_while_a_checkpoint_commits_pend_for_the_next_one(table: Table) -> None:
    table.put(b"k", [1], 1)
    committing = table.seal()
    table.put(b"k", [2], 2)
    assert (table.get(b"k"), list(table.pending)) == ([2], [b"k"])
    table.persist(committing, changelog_offset=0)
    assert (table.get(b"k"), table.committing) == ([2], {})
    table.discard()
    assert table.get(b"k") == [1], "the committed change was lost with the uncommitted one"


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_queued_changes_are_written_a_slice_at_a_time_and_read_meanwhile(kind: str, tmp_path: Path) -> None:
    """A committed checkpoint's changes reach the local store in slices between batches; the changelog offset they
    reach is written with the last slice, so a store cut off in between only restores more."""
    store: Store = MemoryStore() if kind == "memory" else RocksStore(tmp_path / "seen" / "0")
    table = Table("seen", "g-seen-changelog", 0, store)
    for offset in range(5):
        table.put(f"k{offset}".encode(), [offset], offset)
    table.queue_persist(table.seal(), changelog_offset=40)

    assert table.persist_slice(2) == 3
    assert (store.get(b"k0") is not None, store.get(b"k2"), store.changelog_offset()) == (True, None, 0)
    assert [table.get(f"k{offset}".encode()) for offset in range(5)] == [[0], [1], [2], [3], [4]]
    assert table.persist_slice(2) == 1
    assert store.changelog_offset() == 0
    assert table.persist_slice(2) == 0
    assert (store.get(b"k4") is not None, store.changelog_offset(), table.committing) == (True, 40, {})
    assert table.persist_slice(2) == 0, "nothing left to write"
    store.close()


def test_queued_changes_are_written_by_the_share_due() -> None:
    """A share of the queue is written when that share of the writing time has passed, not more (the loop's time
    goes to its records) and never less."""
    table = Table("seen", "g-seen-changelog", 0, MemoryStore())
    for offset in range(10):
        table.put(f"k{offset}".encode(), [offset], offset)
    table.queue_persist(table.seal(), changelog_offset=40)

    assert table.persist_share(0.25) == 7, "a quarter of 10, rounded up"
    assert table.persist_share(0.25) == 7, "nothing more is due"
    assert table.persist_share(0.5) == 5
    assert (table.store.changelog_offset(), len(table.committing)) == (0, 10)
    assert table.persist_share(1.0) == 0
    assert (table.store.changelog_offset(), table.committing) == (40, {})
    assert table.persist_share(1.0) == 0, "nothing left to write"


def test_what_is_queued_for_the_store_is_written_before_the_next_seal_or_a_discard(table: Table) -> None:
    """Queued changes are committed input: the next checkpoint's seal (which replaces what is read as committing)
    and a rewind's discard write them first; a discard still drops what is uncommitted."""
    table.put(b"a", [1], 1)
    table.queue_persist(table.seal(), changelog_offset=None)
    table.put(b"b", [1], 2)
    table.seal()
    assert (table.store.get(b"a") is not None, table.get(b"a"), table.get(b"b")) == (True, [1], [1])
    table.discard()  # b's checkpoint failed

    table.put(b"c", [1], 3)
    table.queue_persist(table.seal(), changelog_offset=None)
    table.put(b"d", [1], 4)
    table.discard()
    assert [table.get(key) for key in (b"a", b"b", b"c", b"d")] == [[1], None, [1], None]
    assert table.end_recorded is False, "changes were written without the changelog's end"


class _CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get(self, key: bytes) -> bytes | None:
        self.reads += 1
        return super().get(key)


def test_a_table_keeps_recent_stored_values_in_memory_and_reads_the_store_once_per_key() -> None:
    store = _CountingStore()
    table = Table("rows", "g-rows-changelog", 0, store, recent_keys=3)
    table.put(b"a", ["org-1", "i-1"], 1)
    table.persist(table.seal(), changelog_offset=1)
    store.write({b"b": _value(table, ["org-1", "i-2"], 2)}, 2)
    assert [table.get(b"a") for _ in range(3)] + [table.get(b"b") for _ in range(3)] == (
        [["org-1", "i-1"]] * 3 + [["org-1", "i-2"]] * 3)
    assert store.reads == 1, "a: kept as the checkpoint wrote it; b: read from the store once"
    for key in (b"c", b"d", b"e"):
        assert table.get(key) is None
    assert len(table.recent) <= 3 and store.reads == 4, "absent keys are read every time, and not kept"
    table.put(b"f", [1], 3)
    table.put(b"g", [1], 3)
    table.persist(table.seal(), changelog_offset=3)
    assert len(table.recent) <= 3, "the memory is bounded: full, it starts over"


def test_what_an_aborted_checkpoint_discards_is_not_kept_as_recent() -> None:
    """Exactly-once: a rewind discards the uncommitted changes and reprocesses their input; the recent values must
    not answer for a change that never reached the store."""
    table = Table("rows", "g-rows-changelog", 0, _CountingStore(), recent_keys=10)
    table.put(b"a", ["org-1", "i-1"], 1)
    table.persist(table.seal(), changelog_offset=1)
    table.put(b"a", ["org-2", "i-9"], 2)
    table.seal()
    table.discard()
    assert (table.get(b"a"), table.recent) == (["org-1", "i-1"], {b"a": table.store.get(b"a")})


def test_a_reopened_rocksdb_store_keeps_the_shared_memory_budget(tmp_path: Path) -> None:
    """A restarted worker reopens its stores: they must still use the process's one block cache (and charge
    their memtables to it), not a cache of their own per store."""
    options = rocks_options(32)
    store = RocksStore(tmp_path / "store", options)
    store.write({b"k%06d" % n: b"v" * 60 for n in range(20_000)}, 7)
    store.close()

    reopened = RocksStore(tmp_path / "store", options)
    for n in range(20_000):
        assert reopened.get(b"k%06d" % n) == b"v" * 60
    assert int(reopened.db.property_value("rocksdb.block-cache-capacity")) == 32 * 1024 * 1024
    assert reopened.changelog_offset() == 7
    reopened.close()


def test_a_store_written_before_universal_compaction_reopens_with_its_data(tmp_path: Path) -> None:
    """Stores of a release before 2026-11-26 (Snappy, leveled compaction, files compacted down to the last level)
    open with today's options (no compression, universal compaction), keep every key and take new writes."""
    from rocksdict import DBCompactionStyle, DBCompressionType

    older = rocks_options(16)
    older.set_compression_type(DBCompressionType.snappy())
    older.set_compaction_style(DBCompactionStyle.level())
    store = RocksStore(tmp_path / "store", older)
    store.write({b"k%06d" % n: b"v" * 60 for n in range(20_000)}, 7)
    store.db.compact_range(None, None)
    store.close()

    reopened = RocksStore(tmp_path / "store", rocks_options(16))
    assert "kCompactionStyleUniversal" in (tmp_path / "store" / "LOG").read_text()
    reopened.write({b"k%06d" % n: b"w" * 60 for n in range(0, 20_000, 2)}, 8)
    for n in range(20_000):
        assert reopened.get(b"k%06d" % n) == (b"w" if n % 2 == 0 else b"v") * 60
    assert reopened.changelog_offset() == 8
    reopened.close()


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_a_deleted_key_is_a_tombstone_in_the_changelog_and_gone_from_the_store(kind: str, tmp_path: Path) -> None:
    """What the sequences horizon does to an idle key; the sweep finds keys in the store in key order."""
    store: Store = MemoryStore() if kind == "memory" else RocksStore(tmp_path / "sequences" / "0")
    table = Table("sequences", "g-sequences-changelog", 0, store, recent_keys=10)
    for n in range(5):
        table.put(b"k%d" % n, [n, 1_000], n)
    table.persist(table.seal(), changelog_offset=5)
    assert [key for key, _ in table.scan(b"", 3)] == [b"k0", b"k1", b"k2"]
    assert table.scan(b"k2", 3) == [(b"k3", [3, 1_000]), (b"k4", [4, 1_000])]

    table.delete(b"k1")
    table.put(b"k3", [9, 2_000], 6)
    assert table.get(b"k1") is None
    assert [key for key, _ in table.scan(b"", 10)] == [b"k0", b"k2", b"k4"], "keys changed since are in use"
    records = table.seal()
    assert dict(table.changelog_messages(records))[b"k1"] is None
    table.persist(records, changelog_offset=7)
    assert (store.get(b"k1"), table.get(b"k1"), table.get(b"k3")) == (None, None, [9, 2_000])
    assert list(table.changelog_messages({b"k0": store.get(b"k0") or b""})) == [(b"k0", store.get(b"k0"))]
    store.close()


def test_restore_progress_counts_from_the_first_of_the_restores_under_way() -> None:
    progress = RestoreProgress()
    progress.started(1_000)
    progress.started(500)
    progress.advanced(1_200)
    assert progress.describe() == "restoring state: 1,200 of 1,500 changelog records read"
    progress.advanced(299)
    progress.ended(1)  # a trailing transaction marker
    progress.started(40)
    assert progress.describe() == "restoring state: 0 of 40 changelog records read", "a new restore starts over"


def test_the_readiness_probe_shows_a_restore_advancing() -> None:
    """A worker not ready because it restores says how far it got, so an operator sees progress, not a hang."""
    progress = RestoreProgress()
    progress.started(2_000)
    progress.advanced(500)
    answers: list[bool | str] = [progress.describe(), False, True]
    server = HealthServer(0, ready=lambda: answers[0], host="127.0.0.1").start()
    try:
        seen = []
        for _ in range(3):
            response = httpx.get(f"http://127.0.0.1:{server.port}/readyz", timeout=5)
            seen.append((response.status_code, response.text))
            answers.pop(0)
    finally:
        server.stop()
    assert seen == [(503, "not ok: restoring state: 500 of 2,000 changelog records read\n"), (503, "not ok\n"),
                    (200, "ok\n")]

"""State recovery against a broker: a restore reads the whole changelog, including what a transaction still holds.

The previous owner of a partition commits its last checkpoint (outputs, changelog, offsets) in one transaction.
Its commit markers reach the changelog a moment after the offsets are readable as stable, and a fenced worker's
open transaction holds the changelog's last stable offset back: a restore that stopped at the last stable offset
numbered keys from an older state (seen in the `pause` chaos scenario as 326 conflicting sequences)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kafka_rekey.services.runtime import state
from kafka_rekey.services.runtime.state import MemoryStore, RocksStore, Table, changelog_ends, rocks_options
from kafka_rekey.services.runtime.topics import InternalTopic, align_configs, changelog_config, ensure_topics

KEY = b"org_timeline/org-acme:10"


def _checkpoint(producer: Producer, changelog: str, sequence: int, input_offset: int) -> None:
    """Produce one changelog record as a checkpoint does: the key's sequence as of `input_offset`."""
    writer = Table("sequences", changelog, 0, MemoryStore())
    writer.put(KEY, [sequence], input_offset)
    for key, value in writer.pending.items():
        producer.produce(changelog, value, key, 0)
    producer.flush(10)


def _transactional(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"owner-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    return producer


def _restore_in_background(bootstrap: str, changelog: str, committed_input: int, batched: bool = False,
                           store: MemoryStore | None = None) -> tuple[Table, threading.Thread]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"restore-{uuid.uuid4().hex[:8]}",
                       "isolation.level": "read_committed", "enable.partition.eof": True,
                       "enable.auto.commit": False})
    watermarks = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks",
                           "isolation.level": "read_uncommitted"})
    try:
        end = changelog_ends(watermarks, [(changelog, 0)])[(changelog, 0)]
    finally:
        watermarks.close()
    table = Table("seen" if batched else "sequences", changelog, 0, store or MemoryStore(), batched)

    def restore() -> None:
        try:
            table.restore(reader, committed_input, end)
        finally:
            reader.close()

    thread = threading.Thread(target=restore, daemon=True)
    thread.start()
    return table, thread


@pytest.mark.parametrize("outcome", ["committed", "aborted"])
def test_a_restore_waits_for_an_open_transaction_and_applies_it_only_if_committed(
        kafka_bootstrap: str, topic_factory: Callable[..., str], outcome: str) -> None:
    changelog = topic_factory(partitions=1, prefix="changelog")
    earlier = _transactional(kafka_bootstrap)
    _checkpoint(earlier, changelog, sequence=3, input_offset=10)
    earlier.commit_transaction(30)
    last_owner = _transactional(kafka_bootstrap)
    _checkpoint(last_owner, changelog, sequence=7, input_offset=20)  # its last checkpoint, not yet committed

    table, restoring = _restore_in_background(kafka_bootstrap, changelog, committed_input=21)
    restoring.join(3)
    assert restoring.is_alive(), "the restore ended below an open transaction of the changelog"
    if outcome == "committed":
        last_owner.commit_transaction(30)
    else:
        last_owner.abort_transaction(30)
    restoring.join(60)
    assert not restoring.is_alive(), "the restore did not end once the transaction was settled"
    assert table.get(KEY) == ([7] if outcome == "committed" else [3])


class _WriteLog(MemoryStore):
    """A memory store that remembers the size and changelog offset of each write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[int, int]] = []

    def write(self, changes: dict[bytes, bytes | None], changelog_offset: int) -> None:
        self.writes.append((len(changes), changelog_offset))
        super().write(changes, changelog_offset)


def test_a_long_restore_writes_the_store_as_it_goes_and_its_changelog_end_last(
        kafka_bootstrap: str, topic_factory: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A restore's memory is bounded: it writes what it folded every `RESTORE_WRITE_EVERY` changes, under the
    store's previous changelog offset (a restore cut off meanwhile starts over from there), the end only last;
    its progress counts every changelog record it read."""
    monkeypatch.setattr(state, "RESTORE_WRITE_EVERY", 1_000)
    changelog = topic_factory(partitions=1, prefix="changelog")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    writer = Table("sequences", changelog, 0, MemoryStore())
    for offset in range(30_000):
        writer.put(f"org-{offset % 5_000}:{offset}".encode(), [offset], offset)
    for key, value in writer.pending.items():
        producer.produce(changelog, value, key, 0)
    producer.flush(10)

    store = _WriteLog()
    table, restoring = _restore_in_background(kafka_bootstrap, changelog, committed_input=30_000, store=store)
    restoring.join(60)
    assert not restoring.is_alive(), "the restore did not end"
    progress = state.RESTORE_PROGRESS  # counted from this restore: none was under way when it started
    assert (progress.read, progress.to_read) == (30_000, 30_000), progress.describe()
    *during, (_, end) = store.writes
    assert end == 30_000 and len(during) >= 3 and all(offset == 0 for _, offset in during), store.writes
    assert [table.get(f"org-{offset % 5_000}:{offset}".encode()) for offset in (0, 14_999, 29_999)] == \
        [[0], [14_999], [29_999]]
    assert len(store.data) == 30_000


def test_a_batched_table_is_restored_from_its_chunks_and_earlier_per_key_records(
        kafka_bootstrap: str, topic_factory: Callable[..., str]) -> None:
    """The dedupe memory's changelog holds per-key records written before it was batched, then chunks."""
    changelog = topic_factory(partitions=1, prefix="changelog")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    writer = Table("seen", changelog, 0, MemoryStore(), batched=True)
    writer.put(b"org-acme:1|event-0", [1, "src/0/0"], 0)
    for key, value in writer.pending.items():  # the record an earlier release wrote for the entry
        producer.produce(changelog, value, key, 0)
    writer.discard()
    for offset in range(1, 6_000):
        writer.put(_seen_key(offset), [offset, f"src/0/{offset}"], offset)
    messages = list(writer.changelog_messages(writer.pending))
    for key, value in messages:
        producer.produce(changelog, value, key, 0)
    producer.flush(10)
    assert len(messages) > 1

    table, restoring = _restore_in_background(kafka_bootstrap, changelog, committed_input=5_000, batched=True)
    restoring.join(60)
    assert not restoring.is_alive(), "the restore did not end"
    assert table.get(b"org-acme:1|event-0") == [1, "src/0/0"]
    assert table.get(_seen_key(4_999)) == [4_999, "src/0/4999"]
    assert table.get(_seen_key(5_000)) is None, "a change past the committed input was applied"
    assert sum(table.get(_seen_key(offset)) is not None for offset in range(1, 6_000)) == 4_999


def test_a_cold_restore_of_the_checkpoints_changelogs_equals_the_stores_they_were_written_with(
        kafka_bootstrap: str, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    """Chunks taken whole and per-key records folded: the restored stores hold what the live ones held, key for key,
    a dedupe entry written again after it expired and keys changed and deleted across checkpoints included."""
    seen_log, sequences_log = (topic_factory(partitions=1, prefix="changelog") for _ in range(2))
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    options = rocks_options(16)
    seen = Table("seen", seen_log, 0, RocksStore(tmp_path / "live" / "seen", options), batched=True)
    sequences = Table("sequences", sequences_log, 0, RocksStore(tmp_path / "live" / "sequences", options))
    offset = 0
    for checkpoint in range(6):
        for _ in range(2_000):
            seen.put(_seen_key(offset), [offset, f"src/0/{offset}"], offset)
            sequences.put(f"org-acme:{offset % 300}".encode(), [offset], offset)
            offset += 1
        seen.put(_seen_key(3), [offset, "again"], offset - 1)  # remembered anew after its horizon
        if checkpoint in (3, 5):
            sequences.delete(f"org-acme:{checkpoint}".encode())  # the one of checkpoint 3 is written again
        for table in (seen, sequences):
            records = table.seal()
            for key, value in table.changelog_messages(records):
                producer.produce(table.changelog, value, key, 0)
            table.persist(records, None)
    producer.flush(10)

    watermarks = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "watermarks"})
    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"restore-{uuid.uuid4().hex[:8]}",
                       "enable.partition.eof": True, "enable.auto.commit": False})
    restored = [Table(table.name, table.changelog, 0, RocksStore(tmp_path / "restored" / table.name, options),
                      table.batched) for table in (seen, sequences)]
    try:
        ends = changelog_ends(watermarks, [(seen_log, 0), (sequences_log, 0)])
        state.restore_tables(reader, [(table, offset, ends[(table.changelog, 0)]) for table in restored])
    finally:
        watermarks.close()
        reader.close()
    for live, restore in zip((seen, sequences), restored, strict=True):
        held, rebuilt = (table.store.scan(b"", 1_000_000) for table in (live, restore))
        assert len(held) == (12_000 if live.batched else 300 - 1)
        assert rebuilt == held, f"{live.name}: the restored store differs from the live one"
        live.close()
        restore.close()


def _seen_key(offset: int) -> bytes:
    return f"org-acme:{offset % 7}|event-{offset}".encode()


def test_a_changelog_an_earlier_release_created_gets_the_configs_a_restore_relies_on(
        kafka_admin: AdminClient, topic_factory: Callable[..., str]) -> None:
    """Created with the broker's segments (never compacted), it is compacted like a new one once a worker starts."""
    name = topic_factory(partitions=1, prefix="changelog", config={"cleanup.policy": "compact"})
    wanted = changelog_config()
    ensure_topics(kafka_admin, [InternalTopic(name, 1, 1, wanted)])
    [future] = kafka_admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)]).values()
    current = {key: entry.value for key, entry in future.result(30).items()}
    assert {key: current[key] for key in wanted} == wanted
    assert align_configs(kafka_admin, [InternalTopic(name, 1, 1, wanted)]) == [], "nothing left to change"


def test_the_tables_of_an_assignment_are_restored_together_each_from_its_own_partition(
        kafka_bootstrap: str, topic_factory: Callable[..., str]) -> None:
    """One reader takes every changelog partition at once; each table gets its partition's changes up to its own
    committed input, a batched table's chunks included."""
    per_key, batched = (topic_factory(partitions=2, prefix="changelog") for _ in range(2))
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    for partition in (0, 1):
        for changelog, is_batched in ((per_key, False), (batched, True)):
            writer = Table("t", changelog, partition, MemoryStore(), is_batched)
            for offset in range(3_000):
                writer.put(f"p{partition}:{offset}".encode(), [offset, changelog], offset)
            for key, value in writer.changelog_messages(writer.pending):
                producer.produce(changelog, value, key, partition)
    producer.flush(10)
    watermarks = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "watermarks"})
    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"restore-{uuid.uuid4().hex[:8]}",
                       "enable.partition.eof": True, "enable.auto.commit": False})
    try:
        tasks = [(Table("t", changelog, partition, MemoryStore(), changelog == batched), 1_000 * (partition + 1),
                  changelog_ends(watermarks, [(changelog, partition)])[(changelog, partition)])
                 for changelog in (per_key, batched) for partition in (0, 1)]
        applied = state.restore_tables(reader, tasks)
    finally:
        watermarks.close()
        reader.close()

    assert applied == 2 * (1_000 + 2_000)
    for table, committed_input, _ in tasks:
        other = 1 - table.partition
        assert table.get(f"p{table.partition}:{committed_input - 1}".encode()) == [committed_input - 1, table.changelog]
        assert table.get(f"p{table.partition}:{committed_input}".encode()) is None
        assert table.get(f"p{other}:0".encode()) is None, "a change of another partition was applied"


def test_a_reader_restores_a_partition_again_after_an_earlier_restore_finished_it(
        kafka_bootstrap: str, topic_factory: Callable[..., str]) -> None:
    """A worker's one reader restores a partition once more after it was lost and assigned again: the earlier
    restore paused the partition when it reached its end, and librdkafka keeps that flag through unassign and
    assign (it hung the broker chaos scenario)."""
    changelog = topic_factory(partitions=1, prefix="changelog")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    _checkpoint(producer, changelog, sequence=3, input_offset=10)
    watermarks = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "watermarks"})
    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"restore-{uuid.uuid4().hex[:8]}",
                       "enable.partition.eof": True, "enable.auto.commit": False})
    restored: list[list[object] | None] = []

    def restore_again() -> None:
        store = MemoryStore()
        first = Table("sequences", changelog, 0, store)
        state.restore_tables(reader, [(first, 100, changelog_ends(watermarks, [(changelog, 0)])[(changelog, 0)])])
        _checkpoint(producer, changelog, sequence=7, input_offset=20)
        again = Table("sequences", changelog, 0, store)
        state.restore_tables(reader, [(again, 100, changelog_ends(watermarks, [(changelog, 0)])[(changelog, 0)])])
        restored.append(again.get(KEY))

    try:
        restoring = threading.Thread(target=restore_again, daemon=True)
        restoring.start()
        restoring.join(30)
        assert not restoring.is_alive(), "the second restore of the partition did not finish within 30 s"
    finally:
        watermarks.close()
        reader.close()
    assert restored == [[7]]

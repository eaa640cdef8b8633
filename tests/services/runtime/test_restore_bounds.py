"""What a restore holds in memory between two writes to the local store, without a broker: a fake reader hands
`restore_tables` a batched table's chunk records, many in one consume, as a consumer with a large prefetch does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import TopicPartition

from kafka_rekey.services.runtime import state
from kafka_rekey.services.runtime.state import MemoryStore, Table, restore_tables
from tests.services.runtime.fakes import FakeMessage

CHANGELOG = "seen-changelog"
ENTRIES_PER_CHUNK = 200


class _Reader:
    """Every record of the assigned partitions in the first consume, whatever it asks for."""

    def __init__(self, logs: dict[int, list[tuple[bytes, bytes | None]]]) -> None:
        self.logs = logs
        self.assigned: list[TopicPartition] = []

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        return 0, len(self.logs[partition.partition])

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = partitions

    def consume(self, num_messages: int, timeout: float) -> list[FakeMessage]:
        messages = [FakeMessage(CHANGELOG, tp.partition, offset, key, value) for tp in self.assigned
                    for offset, (key, value) in enumerate(self.logs[tp.partition]) if offset >= tp.offset]
        self.assigned = []
        return messages

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Nothing more is fetched anyway."""

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Nothing was held back."""

    def unassign(self) -> None:
        self.assigned = []


class _WriteLog(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[int, int]] = []
        """(changes, their bytes) of each write."""

    def write(self, changes: dict[bytes, bytes | None], changelog_offset: int) -> None:
        self.writes.append((len(changes), sum(len(key) + len(value or b"") for key, value in changes.items())))
        super().write(changes, changelog_offset)


def _chunks(partition: int, entries: int) -> Iterator[tuple[bytes, bytes | None]]:
    """A `seen` table's changelog: its checkpoints' chunk records, `ENTRIES_PER_CHUNK` entries each."""
    writer = Table("seen", CHANGELOG, partition, MemoryStore(), batched=True)
    for offset in range(0, entries, ENTRIES_PER_CHUNK):
        for entry in range(offset, offset + ENTRIES_PER_CHUNK):
            writer.put(f"org-{entry % 7}:{entry}|event-{entry}".encode(), [entry, f"src/{partition}/{entry}"], entry)
        sealed = writer.seal()
        yield from writer.changelog_messages(sealed)
        writer.discard()


def _restore(partitions: int, entries: int) -> list[tuple[Table, _WriteLog]]:
    logs = {partition: list(_chunks(partition, entries)) for partition in range(partitions)}
    assert all(len(log) == entries // ENTRIES_PER_CHUNK for log in logs.values())
    stores = [_WriteLog() for _ in range(partitions)]
    tables = [Table("seen", CHANGELOG, partition, store, batched=True) for partition, store in enumerate(stores)]
    restore_tables(_Reader(logs), [(table, entries, len(logs[table.partition])) for table in tables])  # type: ignore[arg-type]
    return list(zip(tables, stores, strict=True))


def test_chunks_taken_in_one_consume_are_written_every_bound_of_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk carries many changes: a consume of many chunks is written as it is folded, never a window of more
    than `RESTORE_WRITE_EVERY` changes and one chunk, and every entry reaches its store."""
    monkeypatch.setattr(state, "RESTORE_WRITE_EVERY", 1_000)
    restored = _restore(partitions=2, entries=10_000)
    for table, store in restored:
        assert len(store.writes) >= 5, store.writes
        assert max(changes for changes, _ in store.writes) <= 1_000 + ENTRIES_PER_CHUNK, store.writes
        assert len(store.data) == 10_000 and store.offset == 10_000 // ENTRIES_PER_CHUNK
        assert table.get(f"org-{9_999 % 7}:9999|event-9999".encode()) == [9_999, f"src/{table.partition}/9999"]


def test_chunks_taken_in_one_consume_are_written_every_bound_of_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bound in bytes, for chunks of large entries: about `RESTORE_WRITE_BYTES` and one chunk."""
    monkeypatch.setattr(state, "RESTORE_WRITE_BYTES", 64 * 1024)
    restored = _restore(partitions=1, entries=10_000)
    (_, store), = restored
    chunk_bytes = max(len(value or b"") for _, value in _chunks(0, ENTRIES_PER_CHUNK))
    assert len(store.writes) >= 5, store.writes
    assert max(size for _, size in store.writes) <= 64 * 1024 + chunk_bytes, store.writes
    assert len(store.data) == 10_000

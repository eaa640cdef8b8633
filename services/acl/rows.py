"""The translate stage's memory of captured rows: a CDC row (its key's columns, `shared.translation.row_key`) ->
(org id, interaction id), a changelogged table per CDC source topic, kept for the source partition the row's
changes arrive on (Debezium keys a row's changes by its primary key, so one partition holds them all). A delete
that carries only the primary key reads it; a row the table does not know, it looks up in the ids a backfill
handed off (`shared.handoff`: the rows whose earlier changes only the backfill read)."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_rekey.services.runtime.processor import TableLookup, TableSpec
from kafka_rekey.services.runtime.topics import changelog_config
from kafka_rekey.shared.translation import DomainEventDraft, RowIds, SourceRecord, ids_to_remember, row_key

NEW_ROW_OPS = frozenset({"c", "r"})
RECENT_ROWS = 16_384
"""Rows whose ids each source partition's table keeps in memory: a row's changes come in bursts (an interaction's
life), and each change reads the row."""


class RowTables:
    """The `RowMemory` of the sources in `topics`, over the runtime's tables of the batch being processed, and
    `handed_off`: the backfill's row ids by (source topic, `row_key`), read when a table misses."""

    def __init__(self, topics: tuple[str, ...], group_id: str,
                 handed_off: Mapping[tuple[str, bytes], RowIds] | None = None) -> None:
        self.names = {topic: f"rows:{topic}" for topic in topics}
        self.specs = tuple(TableSpec(name, topic, f"{group_id}-rows-{topic}-changelog", changelog_config(),
                                     recent_keys=RECENT_ROWS)
                           for topic, name in self.names.items())
        self.tables: TableLookup | None = None
        self.handed_off = handed_off or {}

    def ids_of(self, record: SourceRecord) -> RowIds | None:
        if self.tables is None or not record.key:
            return None
        key = row_key(record.key)
        ids = self.tables(self.names[record.topic], record.partition).get(key)
        if ids is None:
            return self.handed_off.get((record.topic, key)) if self.handed_off else None
        return ids[0], ids[1]

    def learn(self, record: SourceRecord, draft: DomainEventDraft) -> None:
        """Remember the ids a translated change names, unless they are remembered already; an insert or a
        snapshot read names a row not known yet, whose absence need not be looked up."""
        learned = ids_to_remember(record, draft)
        if learned is None or self.tables is None:
            return
        key, ids = learned
        table = self.tables(self.names[record.topic], record.partition)
        if draft.change_op not in NEW_ROW_OPS:
            known = table.get(key)
            if known is not None and (known[0], known[1]) == ids:
                return
        table.put(key, list(ids), record.offset)

"""The backfill -> live hand-off checkpoint: record formats of the compacted checkpoint topic.

Three kinds of records, all keyed so compaction keeps the latest:
- `seq/<topic>/<key>` -> `{"last": n}`: the last sequence the backfill gave an output key in a topic;
- `row/<topic>/<row key>` -> `{"org_id": ..., "interaction_id": ...}`: the ids of the last change the backfill
  translated of a CDC row (`shared.translation.row_key` of its record key), for a delete the live service reads
  that carries only the primary key (`row_key_text`: the canonical JSON as it is, other bytes `hex:<hex>`);
- `src/<topic>/<partition>` -> `{"next_offset": n}`: the snapshot end offset of a source partition, where the
  live service must begin.

`OffsetRange`, the per-partition offsets a backfill read, is the type both sides of the hand-off share.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEQUENCE_PREFIX = "seq/"
SOURCE_PREFIX = "src/"
ROW_PREFIX = "row/"
_HEX = "hex:"



@dataclass(frozen=True)
class OffsetRange:
    """Per-partition [start, end) offsets of one topic: what a batch read covers."""

    topic: str
    start: dict[int, int]
    end: dict[int, int]

    @property
    def records(self) -> int:
        return sum(max(0, self.end[p] - self.start.get(p, 0)) for p in self.end)

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "start": {str(p): o for p, o in self.start.items()},
                "end": {str(p): o for p, o in self.end.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OffsetRange:
        return cls(str(data["topic"]), {int(p): int(o) for p, o in data["start"].items()},
                   {int(p): int(o) for p, o in data["end"].items()})


def sequence_key(topic: str, key: str) -> str:
    """Identity of one dense sequence: an output key within an output topic."""
    return f"{topic}/{key}"


def sequence_record(topic: str, key: str, last: int) -> tuple[bytes, bytes]:
    return f"{SEQUENCE_PREFIX}{sequence_key(topic, key)}".encode(), json.dumps({"last": last}).encode()


def source_offset_record(topic: str, partition: int, next_offset: int) -> tuple[bytes, bytes]:
    return f"{SOURCE_PREFIX}{topic}/{partition}".encode(), json.dumps({"next_offset": next_offset}).encode()


def row_key_text(row_key: bytes) -> str:
    """A row key as text in a record key: a JSON object's canonical text as it is, any other bytes (an Avro key,
    a key that is no JSON object) `hex:` and their hex digits; JSON text never starts with `hex:`."""
    if row_key.startswith(b"{"):
        try:
            return row_key.decode()
        except UnicodeDecodeError:
            pass
    return _HEX + row_key.hex()


def row_key_bytes(text: str) -> bytes:
    """The row key `row_key_text` wrote."""
    return bytes.fromhex(text[len(_HEX):]) if text.startswith(_HEX) else text.encode()


def row_record(topic: str, row_key: bytes, org_id: str, interaction_id: str) -> tuple[bytes, bytes]:
    """The ids of a CDC row of source `topic`, by its `shared.translation.row_key`."""
    return (f"{ROW_PREFIX}{topic}/{row_key_text(row_key)}".encode(),
            json.dumps({"org_id": org_id, "interaction_id": interaction_id}).encode())


@dataclass
class Handoff:
    """The checkpoint as read back: last sequence per sequence key, next offset per source partition, and the
    ids of every CDC row by (source topic, row key) unless `keep_row_ids` is off (a reader that does not
    translate: the backfill's driver, a sequence stage of its own)."""

    last_sequences: dict[str, int] = field(default_factory=dict)
    source_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    row_ids: dict[tuple[str, bytes], tuple[str, str]] = field(default_factory=dict)
    keep_row_ids: bool = True

    def apply(self, key: bytes, value: bytes | None) -> None:
        """Fold one checkpoint record in (later records win, a tombstone forgets)."""
        text = key.decode()
        if text.startswith(SEQUENCE_PREFIX):
            name = text[len(SEQUENCE_PREFIX):]
            if value is None:
                self.last_sequences.pop(name, None)
            else:
                self.last_sequences[name] = int(json.loads(value)["last"])
        elif text.startswith(ROW_PREFIX):
            if self.keep_row_ids:
                self._apply_row(text[len(ROW_PREFIX):], value)
        elif text.startswith(SOURCE_PREFIX):
            topic, partition = text[len(SOURCE_PREFIX):].rsplit("/", 1)
            if value is None:
                self.source_offsets.pop((topic, int(partition)), None)
            else:
                self.source_offsets[(topic, int(partition))] = int(json.loads(value)["next_offset"])

    def _apply_row(self, name: str, value: bytes | None) -> None:
        topic, _, text = name.partition("/")  # a topic name has no `/`; a row key may
        row = (sys.intern(topic), row_key_bytes(text))
        if value is None:
            self.row_ids.pop(row, None)
            return
        ids = json.loads(value)
        # Interned: a topic's name and an org's id are shared by all their rows' entries.
        self.row_ids[row] = (sys.intern(str(ids["org_id"])), str(ids["interaction_id"]))

"""The backfill -> live hand-off checkpoint: record formats of the compacted checkpoint topic.

Two kinds of records, both keyed so compaction keeps the latest:
- `seq/<topic>/<key>` -> `{"last": n}`: the last sequence the backfill gave an output key in a topic;
- `src/<topic>/<partition>` -> `{"next_offset": n}`: the snapshot end offset of a source partition, where the
  live service must begin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

SEQUENCE_PREFIX = "seq/"
SOURCE_PREFIX = "src/"


def sequence_key(topic: str, key: str) -> str:
    """Identity of one dense sequence: an output key within an output topic."""
    return f"{topic}/{key}"


def sequence_record(topic: str, key: str, last: int) -> tuple[bytes, bytes]:
    return f"{SEQUENCE_PREFIX}{sequence_key(topic, key)}".encode(), json.dumps({"last": last}).encode()


def source_offset_record(topic: str, partition: int, next_offset: int) -> tuple[bytes, bytes]:
    return f"{SOURCE_PREFIX}{topic}/{partition}".encode(), json.dumps({"next_offset": next_offset}).encode()


@dataclass
class Handoff:
    """The checkpoint as read back: last sequence per sequence key, next offset per source partition."""

    last_sequences: dict[str, int] = field(default_factory=dict)
    source_offsets: dict[tuple[str, int], int] = field(default_factory=dict)

    def apply(self, key: bytes, value: bytes | None) -> None:
        """Fold one checkpoint record in (later records win, a tombstone forgets)."""
        text = key.decode()
        if text.startswith(SEQUENCE_PREFIX):
            name = text[len(SEQUENCE_PREFIX):]
            if value is None:
                self.last_sequences.pop(name, None)
            else:
                self.last_sequences[name] = int(json.loads(value)["last"])
        elif text.startswith(SOURCE_PREFIX):
            topic, partition = text[len(SOURCE_PREFIX):].rsplit("/", 1)
            if value is None:
                self.source_offsets.pop((topic, int(partition)), None)
            else:
                self.source_offsets[(topic, int(partition))] = int(json.loads(value)["next_offset"])

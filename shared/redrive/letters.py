"""A dead letter as read back from the dead-letter topic (`shared.deadletter` writes its `dlq.*` headers), and
the selection an operator makes of them (reason, source topic, a time range of the dead letters' timestamps)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import msgspec

Headers = tuple[tuple[str, bytes], ...]


class DeadLetterRecord(msgspec.Struct, frozen=True):
    """One record of the dead-letter topic: where it sits there, the source record it keeps, and why."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    reason: str
    error: str
    field: str
    source_topic: str
    source_partition: int
    source_offset: int

    @property
    def position(self) -> str:
        """`<dead-letter topic>/<partition>/<offset>`: what the redrive memory is keyed by."""
        return f"{self.topic}/{self.partition}/{self.offset}"

    @property
    def source_position(self) -> str:
        return f"{self.source_topic}/{self.source_partition}/{self.source_offset}"

    @property
    def original_headers(self) -> list[tuple[str, bytes]]:
        """The source record's own headers, without the `dlq.*` context."""
        return [(name, value) for name, value in self.headers if not name.startswith("dlq.")]


def parse_dead_letter(topic: str, partition: int, offset: int, timestamp_ms: int, key: bytes | None,
                      value: bytes | None, headers: Sequence[tuple[str, bytes | None]]) -> DeadLetterRecord:
    """The dead letter at `topic/partition/offset`; a ValueError naming it and the header it lacks if it is not
    one rekey wrote."""
    kept = tuple((name, header or b"") for name, header in headers)
    found = dict(kept)
    where = f"{topic}/{partition}/{offset}"

    def header(name: str) -> str:
        if name not in found:
            raise ValueError(f"dead letter {where}: no {name} header")
        return found[name].decode("utf-8", "replace")

    def number(name: str) -> int:
        text = header(name)
        if not text.isdigit():
            raise ValueError(f"dead letter {where}: {name} is {text!r}, expected a number")
        return int(text)

    return DeadLetterRecord(topic, partition, offset, timestamp_ms, key, value, kept, header("dlq.reason"),
                            found.get("dlq.error", b"").decode("utf-8", "replace"),
                            found.get("dlq.field", b"").decode("utf-8", "replace"),
                            header("dlq.source.topic"), number("dlq.source.partition"), number("dlq.source.offset"))


class Selection(msgspec.Struct, frozen=True):
    """Which dead letters a command takes: any criterion left None takes all; `since` inclusive, `until`
    exclusive, both on the dead letter's timestamp (when it was dead-lettered)."""

    reason: str | None = None
    source: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None

    def matches(self, letter: DeadLetterRecord) -> bool:
        return ((self.reason is None or letter.reason == self.reason)
                and (self.source is None or letter.source_topic == self.source)
                and (self.since_ms is None or letter.timestamp_ms >= self.since_ms)
                and (self.until_ms is None or letter.timestamp_ms < self.until_ms))


def hour_of(timestamp_ms: int) -> str:
    """The UTC hour a timestamp falls in, as `2026-11-27T02:00Z`."""
    return datetime.fromtimestamp(timestamp_ms // 3_600_000 * 3600, UTC).strftime("%Y-%m-%dT%H:00Z")

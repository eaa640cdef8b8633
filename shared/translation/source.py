"""What the translator reads: one Kafka record of a source topic, and which source format it is in."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from kafka_rekey.shared.source_formats import SourceFormat

__all__ = ["SourceFormat", "SourceRecord"]


class SourceRecord(msgspec.Struct, frozen=True, gc=False):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Mapping[str, bytes] = msgspec.field(default_factory=dict)
    timestamp_ms: int | None = None

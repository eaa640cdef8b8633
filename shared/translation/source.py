"""What the translator reads: one Kafka record of a source topic, and which source format it is in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class SourceFormat(StrEnum):
    """Source formats rekey translates (the catalog's `format` of a source topic)."""

    GENESYS = "genesys"
    """Contact-centre (CCaaS) event-stream JSON: one interaction event per record."""
    DEBEZIUM = "debezium"
    """Debezium change events of the `interactions` table (JSON converter, with or without schema wrapper)."""


@dataclass(frozen=True)
class SourceRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Mapping[str, bytes] = field(default_factory=dict)
    timestamp_ms: int | None = None

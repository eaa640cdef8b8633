"""Moving consumer groups between source topics and the families re-keyed from them (`rekey migrate`), and the
filter a moved group's consumer applies.

A consumer moved onto a family (or back) may read again records it consumed before the move. It drops them by
the boundary its migration recorded::

    from kafka_rekey.services.migration import already_consumed, read_boundary

    boundary = read_boundary(kafka_config, "rekey_migrations_v1", "billing", "interaction_events")
    for message in consumer.consume(500):
        if not already_consumed(message, boundary):
            handle(message)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kafka_rekey.services.migration.records import read_migrations
from kafka_rekey.services.migration.scanning import source_position
from kafka_rekey.shared.migration import Boundary, covers
from kafka_rekey.shared.sequencing import SourcePosition

__all__ = ["already_consumed", "read_boundary"]


class _Record(Protocol):
    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def headers(self) -> Any: ...


def read_boundary(config: Mapping[str, Any], migrations_topic: str, group: str, family: str) -> Boundary:
    """What `group` had consumed when it moved between `family` and its sources (empty: it never moved)."""
    migration = read_migrations(config, migrations_topic).migrations.get((group, family))
    return migration.consumed() if migration is not None else {}


def already_consumed(record: _Record, boundary: Boundary) -> bool:
    """Whether `record` (a confluent-kafka `Message`) was consumed by the group before its move: a family
    record by the source position in its `src` header, a source record by its own position."""
    position = source_position(record.headers())
    if position is None:
        topic, partition, offset = record.topic(), record.partition(), record.offset()
        if topic is None or partition is None or offset is None:
            return False
        position = SourcePosition(topic, partition, offset)
    return covers(boundary, position)

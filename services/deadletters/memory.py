"""The redrive memory: a compacted topic keyed by dead-letter position, one record per dead letter re-sent.

Written only after the re-sent records are delivered, so a redrive stopped in between re-sends those dead
letters next time; the ACL's dedupe drops the second copy of an event whose source dedupes by event id."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import Producer

from kafka_rekey.services.kafka.reading import iter_topic


def redriven_positions(config: dict[str, Any], topic: str) -> set[str]:
    """Every dead-letter position the memory holds (a tombstone forgets one)."""
    positions: set[str] = set()
    for message in iter_topic(config, topic, idle_timeout=10.0):
        key = (message.key() or b"").decode()
        if message.value() is None:
            positions.discard(key)
        else:
            positions.add(key)
    return positions


def remember(producer: Producer, topic: str, records: Iterable[tuple[str, bytes]]) -> None:
    """Write (position, value) records to the memory and wait until they are delivered."""
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for position, value in records:
        producer.produce(topic, value, position.encode(), on_delivery=delivered)
        producer.poll(0)
    _flush(producer, failures, f"the redrive memory {topic}")


def _flush(producer: Producer, failures: list[str], what: str) -> None:
    left = producer.flush(60)
    if left or failures:
        raise RuntimeError(f"{what}: {left} records undelivered after 60 s" if left
                           else f"{what}: delivery failed: {failures[0]}")

"""`rekey deadletters list` and `show`: the dead letters counted by reason, source topic and hour, or shown one
by one with their `dlq.*` context and their value decoded where it can be (JSON, Avro in the Confluent wire
format through the registry, else text or base64)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from kafka_rekey.services.deadletters.reading import DeadLetterReader
from kafka_rekey.services.kafka.reading import text_or_base64
from kafka_rekey.shared.redrive import DeadLetterRecord, Selection, hour_of
from kafka_rekey.shared.translation import AvroValues
from kafka_rekey.shared.translation.fields import Invalid


def count_dead_letters(config: dict[str, Any], topic: str, selection: Selection,
                       progress: Callable[[int], None] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows {reason, source, hour, count} (most first) of the selected dead letters, and the unreadable records."""
    counts: Counter[tuple[str, str, str]] = Counter()
    reader = DeadLetterReader(config, topic, progress)
    for letter in reader:
        if selection.matches(letter):
            counts[(letter.reason, letter.source_topic, hour_of(letter.timestamp_ms))] += 1
    rows = [{"reason": reason, "source": source, "hour": hour, "count": count}
            for (reason, source, hour), count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    return rows, reader.unreadable


def show_dead_letters(config: dict[str, Any], topic: str, selection: Selection, limit: int,
                      avro: AvroValues | None) -> Iterator[dict[str, Any]]:
    """Up to `limit` selected dead letters as JSON-ready documents."""
    shown = 0
    for letter in DeadLetterReader(config, topic):
        if shown >= limit:
            return
        if selection.matches(letter):
            shown += 1
            yield describe(letter, avro)


def describe(letter: DeadLetterRecord, avro: AvroValues | None) -> dict[str, Any]:
    return {
        "position": letter.position, "timestamp_ms": letter.timestamp_ms, "reason": letter.reason,
        "error": letter.error, "field": letter.field or None, "source": letter.source_position,
        "key": text_or_base64(letter.key),
        "headers": {name: text_or_base64(value) for name, value in letter.headers},
        **_value(letter.value, avro, letter.position),
    }


def _value(value: bytes | None, avro: AvroValues | None, where: str) -> dict[str, Any]:
    if value is None:
        return {"value": None}
    if avro is not None and len(value) > 5 and value[0] == 0:
        try:
            decoded, _writer = avro.decode(value, where)
            return {"value": decoded, "value_encoding": "avro"}
        except Invalid:  # not Avro after all (or a schema the registry lacks): shown as it is
            pass
    try:
        return {"value": json.loads(value), "value_encoding": "json"}
    except ValueError:
        pass
    text = text_or_base64(value)
    return {"value": text, "value_encoding": "text" if isinstance(text, str) else "base64"}


"""The dead-letter topic read once, each record parsed back into a `DeadLetterRecord`; records that are not dead
letters rekey wrote (no `dlq.*` context) are counted apart, never guessed at."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kafka_rekey.services.kafka.reading import iter_topic, message_headers
from kafka_rekey.shared.redrive import DeadLetterRecord, parse_dead_letter


class DeadLetterReader:
    """Iterates the dead letters of `topic`; `unreadable` lists the one-line reasons of the records it passed over."""

    def __init__(self, config: dict[str, Any], topic: str, progress: Callable[[int], None] | None = None) -> None:
        self.config = config
        self.topic = topic
        self.progress = progress
        self.unreadable: list[str] = []

    def __iter__(self) -> Iterator[DeadLetterRecord]:
        for message in iter_topic(self.config, self.topic, idle_timeout=10.0, progress=self.progress):
            try:
                yield parse_dead_letter(self.topic, message.partition() or 0, message.offset() or 0,
                                        message.timestamp()[1], message.key(), message.value(),
                                        message_headers(message))
            except ValueError as error:
                self.unreadable.append(str(error))

"""Where a replay writes the org's records: a JSON-lines file (values decoded from Avro through the registry) or
a topic (key, value and headers unchanged, each key on its Java-parity partition)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Message

from kafka_rekey.services.kafka.reading import message_headers, text_or_base64
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings


def write_file(path: Path, messages: Sequence[Message], subject: str, registry: RegistrySettings) -> None:
    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.services.registry.serde import AvroSerde
    from kafka_rekey.shared.avro import load_schema

    serde = AvroSerde(SchemaRegistryClient(registry), subject, load_schema("interaction_event"))
    with path.open("w") as lines:
        for message in messages:
            value = message.value()
            lines.write(json.dumps({
                "topic": message.topic(), "partition": message.partition(), "offset": message.offset(),
                "timestamp_ms": message.timestamp()[1], "key": text_or_base64(message.key()),
                "headers": {name: text_or_base64(header) for name, header in message_headers(message)},
                "value": None if value is None else serde.decode(value),
            }, sort_keys=True, default=str) + "\n")


def write_topic(kafka: KafkaSettings, topic: str, messages: Sequence[Message]) -> None:
    from kafka_rekey.services.kafka.producers import make_producer

    producer = make_producer(kafka)
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for message in messages:
        headers: list[tuple[str, str | bytes | None]] = [*message_headers(message)]
        while True:
            try:
                producer.produce(topic, message.value(), message.key(), headers=headers,
                                 timestamp=message.timestamp()[1], on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(60)
    if left or failures:
        raise RuntimeError(f"replay to {topic}: {left} records undelivered after 60 s" if left
                           else f"replay to {topic}: a record was refused: {failures[0]}")


"""Read a topic once: every committed record (from given offsets) up to the end offsets taken at the start."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kafka_rekey.services.kafka.transient import LEADER_MOVING


def iter_topic(config: dict[str, Any], topic: str, idle_timeout: float = 30.0,
               progress: Callable[[int], None] | None = None,
               isolation: str = "read_committed") -> Iterator[Message]:
    """Every committed record of `topic` up to the end offsets taken when the call starts."""
    return iter_from(config, topic, {}, idle_timeout, progress, isolation)


def iter_from(config: dict[str, Any], topic: str, starts: dict[int, int], idle_timeout: float = 30.0,
              progress: Callable[[int], None] | None = None,
              isolation: str = "read_committed") -> Iterator[Message]:
    """The committed records of `topic` from the offset `starts` gives a partition (its beginning if none) up to
    the end offsets taken when the call starts."""
    consumer = Consumer({**config, "group.id": f"rekey-reader-{uuid.uuid4()}", "enable.auto.commit": False,
                         "isolation.level": isolation, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True, "fetch.max.bytes": 52428800})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        if metadata.error is not None:  # missing, or not ours to describe: say which topic
            raise KafkaException(KafkaError(metadata.error.code(), f"topic {topic!r}: {metadata.error.str()}"))
        remaining: dict[int, int] = {}
        for partition in metadata.partitions:
            low, high = _watermarks(consumer, TopicPartition(topic, partition))
            if high > max(low, starts.get(partition, 0)):
                remaining[partition] = high
        consumer.assign([TopicPartition(topic, p, starts.get(p, 0)) for p in remaining])
        idle_since = time.monotonic()
        while remaining:
            # consume() waits until the batch is full or the timeout passes: keep the timeout short.
            batch = consumer.consume(5000, timeout=0.5)
            if not batch:
                if time.monotonic() - idle_since > idle_timeout:
                    open_partitions = sorted(remaining)
                    raise TimeoutError(f"{topic}: nothing read for {idle_timeout}s, partitions {open_partitions} open")
                continue
            idle_since = time.monotonic()
            records = 0
            for message in batch:
                error = message.error()
                if error is not None:
                    # End of partition: under read_committed this is past any trailing transaction marker.
                    if error.code() == KafkaError._PARTITION_EOF:
                        if message.offset() >= remaining.get(message.partition(), 0):
                            remaining.pop(message.partition(), None)
                        continue
                    raise KafkaException(error)
                records += 1
                yield message
            if progress is not None:
                progress(records)
    finally:
        consumer.close()


def _watermarks(consumer: Consumer, partition: TopicPartition, patience: float = 30.0) -> tuple[int, int]:
    """Low and high watermark of `partition`, asked again while its leader is being elected."""
    deadline = time.monotonic() + patience
    while True:
        try:
            low, high = consumer.get_watermark_offsets(partition, timeout=10)
            return int(low), int(high)
        except KafkaException as error:
            if error.args[0].code() not in LEADER_MOVING or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def message_headers(message: Message) -> list[tuple[str, bytes | None]]:
    """A consumed record's headers as (name, bytes) pairs, in order (a consumer returns them as a list)."""
    raw = message.headers() or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    return [(name, value.encode() if isinstance(value, str) else value) for name, value in pairs]


def text_or_base64(value: bytes | None) -> str | dict[str, str] | None:
    """Bytes as JSON can carry them: UTF-8 text as a string, anything else as `{"base64": ...}`."""
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode()}

"""The one factory every producer rekey creates goes through, so every keyed record lands where Java's would.

librdkafka's default partitioner (`consistent_random`, CRC32) puts a key on a different partition than the Java
client's murmur2; `murmur2_random` is the same `toPositive(murmur2(key)) % partitions` as
`shared.partitioning.partition_for` (and spreads null keys randomly). Callers may also pass an explicit
`partition=route.partition`; either way the record lands on `partition_for(key, partitions)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from confluent_kafka import Producer

from kafka_rekey.services.settings import KafkaSettings

JAVA_COMPATIBLE_PARTITIONER: Final = "murmur2_random"

PRODUCER_DEFAULTS: Final[dict[str, Any]] = {
    "partitioner": JAVA_COMPATIBLE_PARTITIONER,
    "enable.idempotence": True,
    "acks": "all",
    "compression.type": "lz4",
}


def check_partitioner_config(config: Mapping[str, Any]) -> None:
    """Refuse a producer config whose partitioner would not match Java's murmur2 (unset means librdkafka's
    `consistent_random`, which does not)."""
    partitioner = config.get("partitioner")
    if partitioner != JAVA_COMPATIBLE_PARTITIONER:
        shown = "unset (librdkafka defaults to consistent_random)" if partitioner is None else repr(partitioner)
        raise ValueError(
            f"producer setting 'partitioner' is {shown}: rekey requires {JAVA_COMPATIBLE_PARTITIONER!r} so keyed "
            "records land on the same partition as with the Java client (toPositive(murmur2(key)) % partitions)"
        )


def make_producer(kafka: KafkaSettings, **overrides: Any) -> Producer:
    """A confluent-kafka Producer for `kafka` with rekey's defaults (murmur2_random, idempotence, acks=all,
    lz4). `overrides` are librdkafka settings by their dotted names, e.g. `**{"linger.ms": 20}`, or callbacks
    such as `error_cb`; any partitioner but murmur2_random is refused with a ValueError."""
    config = {**kafka.librdkafka(), **PRODUCER_DEFAULTS, **overrides}
    check_partitioner_config(config)
    return Producer(config)


def produce_waiting(producer: Producer, topic: str, value: bytes | None, key: bytes | None = None,
                    partition: int = -1, wait: float = 0.05, **kwargs: Any) -> None:
    """`producer.produce`, serving delivery reports while its local queue is full (`BufferError`) until the record
    fits: a burst of records waits for librdkafka to send, it is neither dropped nor an error."""
    while True:
        try:
            producer.produce(topic, value, key, partition, **kwargs)
            return
        except BufferError:
            producer.poll(wait)

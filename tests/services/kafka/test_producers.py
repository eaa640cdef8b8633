"""The producer factory: murmur2_random puts every key where Java would; librdkafka's default does not."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from kafka_rekey.services.kafka.producers import check_partitioner_config, make_producer
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.partitioning import partition_for
from tests.support.kafka import read_topic

pytestmark = pytest.mark.broker

PARTITIONS = 7
KEYS = [f"org-{i % 13}:interaction-{i}" for i in range(300)] + ["", "ü-日本:🎉"]


def _produce(producer: Producer, topic: str) -> None:
    failures: list[str] = []
    for key in KEYS:
        producer.produce(topic, key=key.encode(), value=b"v",
                         on_delivery=lambda err, _msg: failures.append(str(err)) if err else None)
    assert producer.flush(30) == 0
    assert failures == []


def test_factory_producer_lands_every_key_on_partition_for(
    kafka_bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(partitions=PARTITIONS, prefix="murmur2")
    _produce(make_producer(KafkaSettings(bootstrap_servers=kafka_bootstrap), **{"linger.ms": 5}), topic)
    records = read_topic(kafka_bootstrap, topic)
    assert len(records) == len(KEYS)
    wrong = [(r.key, r.partition) for r in records
             if r.partition != partition_for((r.key or b"").decode(), PARTITIONS)]
    assert wrong == []


def test_librdkafka_default_partitioner_disagrees_with_java(
    kafka_bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    """Why rekey refuses `consistent_random`: it hashes with CRC32, so keys land elsewhere than with Java."""
    topic = topic_factory(partitions=PARTITIONS, prefix="crc32")
    _produce(Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "consistent_random"}), topic)
    records = read_topic(kafka_bootstrap, topic)
    assert len(records) == len(KEYS)
    mismatched = [r for r in records if r.partition != partition_for((r.key or b"").decode(), PARTITIONS)]
    assert len(mismatched) > len(KEYS) // 2


@pytest.mark.parametrize("partitioner", [None, "consistent_random", "murmur2", "random", "fnv1a_random"])
def test_any_other_partitioner_is_refused(partitioner: str | None) -> None:
    config = {} if partitioner is None else {"partitioner": partitioner}
    with pytest.raises(ValueError, match=r"producer setting 'partitioner' is .* rekey requires 'murmur2_random'"):
        check_partitioner_config(config)
    if partitioner is not None:
        with pytest.raises(ValueError, match=f"'partitioner' is '{partitioner}'"):
            make_producer(KafkaSettings(), partitioner=partitioner)


def test_murmur2_random_is_accepted() -> None:
    check_partitioner_config({"partitioner": "murmur2_random"})

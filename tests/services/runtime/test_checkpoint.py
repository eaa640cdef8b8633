"""The deadline a checkpoint puts around librdkafka's transactional calls (librdkafka#5456: a call that never
returns must not stall the worker), and a producer that failed for good."""

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from services.runtime.checkpoint import Checkpoint, CheckpointFailed, ProducerStuck, within_deadline


def test_a_call_that_never_returns_is_reported_stuck_at_the_deadline() -> None:
    released = threading.Event()
    started = time.monotonic()
    with pytest.raises(ProducerStuck, match="send_offsets_to_transaction did not return within 0s"):
        within_deadline(released.wait, 0.3, "send_offsets_to_transaction")
    assert 0.3 <= time.monotonic() - started < 2.0
    released.set()


def test_what_the_call_raises_is_raised_to_the_caller() -> None:
    def refused() -> None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "coordinator unavailable"))

    with pytest.raises(KafkaException, match="coordinator unavailable"):
        within_deadline(refused, 5.0, "commit_transaction")


def test_a_call_that_returns_in_time_is_waited_for() -> None:
    done: list[int] = []
    within_deadline(lambda: done.append(1), 5.0, "commit_transaction")
    assert done == [1]


def test_a_producer_failed_for_good_blocks_the_commit_until_it_is_replaced() -> None:
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "checkpoint-test"})
    first, second = (Producer({"bootstrap.servers": "127.0.0.1:1"}) for _ in range(2))
    checkpoint = Checkpoint(consumer, first, consumer, exactly_once=False, tables={})
    checkpoint.offsets[("source", 0)] = 10
    checkpoint.producer_failed(KafkaError(KafkaError._FATAL, "idempotence sequence broken", fatal=True))

    with pytest.raises(CheckpointFailed, match="the producer failed for good"):
        checkpoint.commit()
    with pytest.raises(KafkaException) as raised:
        checkpoint.abandon()
    assert raised.value.args[0].fatal()
    assert checkpoint.offsets == {("source", 0): 10}  # nothing dropped before the producer is replaced

    checkpoint.use(second)
    checkpoint.abandon()
    assert checkpoint.offsets == {}
    consumer.close()

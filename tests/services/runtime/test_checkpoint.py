"""The deadline the producer's owner puts around librdkafka's transactional calls (librdkafka#5456: a call that
never returns must not stall the worker), a producer that failed for good, and the checkpoint's phases."""

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException

from kafka_rekey.services.runtime.checkpoint import Checkpoint
from kafka_rekey.services.runtime.failures import CheckpointFailed, ProducerStuck
from kafka_rekey.services.runtime.output_producer import OutputProducer, within_deadline
from kafka_rekey.services.runtime.phases import CheckpointState, IllegalTransition, Phase


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
    producer = OutputProducer({"bootstrap.servers": "127.0.0.1:1"})
    first = producer.client
    checkpoint = Checkpoint(consumer, producer, consumer, tables={})
    checkpoint.offsets[("source", 0)] = 10
    producer.unusable = KafkaException(KafkaError(KafkaError._FATAL, "idempotence sequence broken", fatal=True))

    with pytest.raises(CheckpointFailed, match="the producer failed for good"):
        checkpoint.commit()
    with pytest.raises(KafkaException) as raised:
        checkpoint.abandon()
    assert raised.value.args[0].fatal()
    assert checkpoint.offsets == {("source", 0): 10}  # nothing dropped before the producer is replaced

    producer.replace()
    assert producer.client is not first and producer.unusable is None
    checkpoint.abandon()
    assert checkpoint.offsets == {}
    consumer.close()


def test_checkpoint_phases_move_only_along_their_allowed_transitions() -> None:
    state = CheckpointState()
    for phase in (Phase.DRAINING, Phase.COMMITTING, Phase.FOLDED, Phase.DRAINING, Phase.IDLE):
        state.to(phase)
    assert state.phase is Phase.IDLE
    with pytest.raises(IllegalTransition, match="idle -> committing"):
        state.to(Phase.COMMITTING)
    state.to(Phase.DRAINING)
    with pytest.raises(IllegalTransition, match="draining -> folded"):
        state.to(Phase.FOLDED)
    state.reset()
    assert state.phase is Phase.IDLE


def test_a_checkpoint_step_out_of_order_raises() -> None:
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "checkpoint-test"})
    checkpoint = Checkpoint(consumer, OutputProducer({"bootstrap.servers": "127.0.0.1:1"}), consumer, tables={})
    with pytest.raises(IllegalTransition, match="not draining"):
        checkpoint.finish_drain()
    with pytest.raises(IllegalTransition, match="idle -> folded"):
        checkpoint.fold_commit()
    consumer.close()

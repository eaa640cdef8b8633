"""The deadline a checkpoint puts around librdkafka's transactional calls (librdkafka#5456: a call that never
returns must not stall the worker)."""

import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from services.runtime.checkpoint import ProducerStuck, within_deadline


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

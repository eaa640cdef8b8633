"""`committed_task` on a real broker: a retry finds the marker its predecessor committed, an aborted marker does
not count, and a task without a marker is not held back by another task's open transaction."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer

from kafka_rekey.services.handoff import committed_task, task_key, task_partition, transactional_id

pytestmark = pytest.mark.broker

PARTITIONS = 3
TIMEOUT = 20.0


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:12]


@pytest.fixture
def handoff_topic(topic_factory: Callable[..., str]) -> str:
    return topic_factory(partitions=PARTITIONS, prefix="handoff")


@pytest.fixture
def attempts(kafka_bootstrap: str) -> Iterator[Callable[[str, int], Producer]]:
    """Start an attempt of task `partition` of a run: a transactional producer with the task's id, initialised."""
    started: list[Producer] = []

    def start(run_id: str, partition: int) -> Producer:
        producer = Producer({"bootstrap.servers": kafka_bootstrap,
                             "transactional.id": transactional_id(run_id, partition)})
        producer.init_transactions(30)
        started.append(producer)
        return producer

    yield start
    for producer in started:
        producer.flush(5)


def _send_marker(producer: Producer, topic: str, run_id: str, partition: int, tally: dict[str, int]) -> None:
    producer.begin_transaction()
    producer.produce(topic, json.dumps(tally).encode(), task_key(run_id, partition),
                     task_partition(run_id, partition, PARTITIONS))
    assert producer.flush(30) == 0


def _look(bootstrap: str, topic: str, run_id: str, partition: int) -> dict[str, object] | None:
    return committed_task({"bootstrap.servers": bootstrap}, topic, PARTITIONS, run_id, partition, {},
                          timeout=TIMEOUT)


def test_a_retry_finds_the_marker_its_predecessor_committed(
        kafka_bootstrap: str, handoff_topic: str, run_id: str, attempts: Callable[[str, int], Producer]) -> None:
    first = attempts(run_id, 4)
    _send_marker(first, handoff_topic, run_id, 4, {"written": 3})
    first.commit_transaction(30)
    attempts(run_id, 4)
    assert _look(kafka_bootstrap, handoff_topic, run_id, 4) == {"written": 3}


def test_a_marker_whose_transaction_a_retry_aborted_does_not_count(
        kafka_bootstrap: str, handoff_topic: str, run_id: str, attempts: Callable[[str, int], Producer]) -> None:
    _send_marker(attempts(run_id, 4), handoff_topic, run_id, 4, {"written": 3})
    attempts(run_id, 4)  # fences the first attempt and aborts its transaction
    assert _look(kafka_bootstrap, handoff_topic, run_id, 4) is None


def test_a_task_without_a_marker_is_not_held_back_by_another_tasks_open_transaction(
        kafka_bootstrap: str, handoff_topic: str, run_id: str, attempts: Callable[[str, int], Producer]) -> None:
    where = task_partition(run_id, 4, PARTITIONS)
    killed = attempts(run_id, 5)  # another task's attempt, killed with its transaction open on our partition
    killed.begin_transaction()
    killed.produce(handoff_topic, b"{}", b"seq/some-key", where)
    assert killed.flush(30) == 0
    attempts(run_id, 4)
    assert _look(kafka_bootstrap, handoff_topic, run_id, 4) is None
    killed.abort_transaction(30)

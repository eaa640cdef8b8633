"""The worker's own state machine through rebalances (assign, incremental and eager revocation, lost partitions),
a fenced producer and failed commits, driven with plain fakes of the confluent-kafka calls it makes (no broker):
what it commits, what it rereads, what reaches the outputs. The same paths run on real brokers in tests/chaos and
test_drain.py; fakes here make each sequence exact and repeatable."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafka_rekey.services.runtime.phases import Phase
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.services.runtime.worker import KafkaClients, Worker
from tests.services.runtime.fakes import FakeMessage

SOURCE, OUTPUT = "source", "out"
OFFSET_INVALID = -1001
Position = tuple[str, int]


@dataclass
class Cluster:
    """The broker's side: source records, the group's committed offsets and generation, what readers see."""

    records: dict[Position, list[bytes]] = field(default_factory=dict)
    committed: dict[Position, int] = field(default_factory=dict)
    outputs: list[bytes] = field(default_factory=list)
    """Delivered outputs (exactly-once: of committed transactions), in order."""
    generation: int = 1
    transactional_owner: dict[str, FakeProducer] = field(default_factory=dict)
    commit_failures: list[KafkaError] = field(default_factory=list)
    """Raised by the next commit_transaction calls, one each."""
    offset_commit_refusals: int = 0
    commit_gate: threading.Event | None = None
    """When set, commit_transaction waits for it (a coordinator slow to answer)."""
    sent_offsets: list[dict[Position, int]] = field(default_factory=list)

    def append(self, partition: int, *values: str) -> None:
        self.records.setdefault((SOURCE, partition), []).extend(value.encode() for value in values)

    def seen(self) -> list[str]:
        return [value.decode() for value in self.outputs]


class FakeConsumer:
    def __init__(self, config: dict[str, Any], cluster: Cluster) -> None:
        self.cluster = cluster
        self.callbacks: dict[str, Callable[..., None]] = {}
        self.positions: dict[Position, int] = {}
        self.events: list[tuple[str, list[TopicPartition]]] = []
        self.calls: list[tuple[str, list[Position]]] = []
        self.seeks: list[tuple[Position, int]] = []

    # the group
    def subscribe(self, topics: list[str], on_assign: Callable[..., None], on_revoke: Callable[..., None],
                  on_lost: Callable[..., None]) -> None:
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}

    def rebalance(self, kind: str, *partitions: int) -> None:
        """A rebalance event the next consume() serves, as librdkafka serves them inside its poll."""
        self.events.append((kind, [TopicPartition(SOURCE, p) for p in partitions]))

    def _record(self, call: str, partitions: list[TopicPartition]) -> None:
        self.calls.append((call, [(tp.topic, tp.partition) for tp in partitions]))

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self._record("incremental_assign", partitions)
        for tp in partitions:
            self.positions[(tp.topic, tp.partition)] = max(0, self.cluster.committed.get((tp.topic, tp.partition), 0))

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._record("incremental_unassign", partitions)
        for tp in partitions:
            self.positions.pop((tp.topic, tp.partition))

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.positions.clear()
        self.incremental_assign(partitions)
        self.calls[-1] = ("assign", self.calls[-1][1])

    def unassign(self) -> None:
        self.calls.append(("unassign", sorted(self.positions)))
        self.positions.clear()

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(topic, partition) for topic, partition in sorted(self.positions)]

    def consumer_group_metadata(self) -> int:
        return self.cluster.generation

    def memberid(self) -> str:
        return "member-1"

    # records and offsets
    def consume(self, size: int, timeout: float) -> list[FakeMessage]:
        while self.events:
            kind, partitions = self.events.pop(0)
            self.callbacks[kind](self, partitions)
        batch: list[FakeMessage] = []
        for (topic, partition), position in sorted(self.positions.items()):
            values = self.cluster.records.get((topic, partition), [])[position:position + size - len(batch)]
            batch += [FakeMessage(topic, partition, position + i, value, value) for i, value in enumerate(values)]
            self.positions[(topic, partition)] = position + len(values)
        return batch

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition,
                               self.cluster.committed.get((tp.topic, tp.partition), OFFSET_INVALID))
                for tp in partitions]

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        if self.cluster.offset_commit_refusals:
            self.cluster.offset_commit_refusals -= 1
            raise KafkaException(KafkaError(KafkaError.REBALANCE_IN_PROGRESS, "rebalance in progress"))
        self.cluster.committed.update({(tp.topic, tp.partition): tp.offset for tp in offsets})

    def seek(self, tp: TopicPartition) -> None:
        position = (tp.topic, tp.partition)
        if position not in self.positions:
            raise KafkaException(KafkaError(KafkaError._STATE, "not assigned"))
        self.seeks.append((position, tp.offset))
        self.positions[position] = 0 if tp.offset == -2 else tp.offset

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.positions[(tp.topic, tp.partition)]) for tp in partitions]

    def get_watermark_offsets(self, tp: TopicPartition, cached: bool) -> tuple[int, int]:
        return 0, len(self.cluster.records.get((tp.topic, tp.partition), []))


FENCED = KafkaError(KafkaError._FENCED, "fenced by a newer instance with this transactional.id", fatal=True)


class FakeProducer:
    def __init__(self, config: dict[str, Any], cluster: Cluster) -> None:
        self.cluster = cluster
        self.transactional_id: str | None = config.get("transactional.id")
        self.on_delivery: Callable[..., None] = config["on_delivery"]
        self.queue: list[tuple[str, bytes | None]] = []
        self.transaction: list[bytes] | None = None
        self.offsets: dict[Position, int] = {}
        self.purged = False

    def _check_fenced(self) -> None:
        if self.transactional_id is not None and self.cluster.transactional_owner.get(self.transactional_id) \
                is not self:
            raise KafkaException(FENCED)

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1,
                headers: object = None) -> None:
        if self.transaction is not None:
            self.transaction.append(value or b"")
        else:
            self.queue.append((topic, value))

    def poll(self, timeout: float) -> int:
        delivered, self.queue = self.queue, []
        self.cluster.outputs += [value or b"" for _topic, value in delivered]
        return len(delivered)

    def flush(self, timeout: float) -> int:
        self.poll(timeout)
        return 0

    def __len__(self) -> int:
        return len(self.queue)

    def purge(self) -> None:
        self.purged = True
        self.queue.clear()

    def init_transactions(self, timeout: float) -> None:
        assert self.transactional_id is not None
        self.cluster.transactional_owner[self.transactional_id] = self  # fences the previous owner

    def begin_transaction(self) -> None:
        self._check_fenced()
        assert self.transaction is None, "a transaction is already open"
        self.transaction, self.offsets = [], {}

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: int, timeout: float) -> None:
        self._check_fenced()
        if metadata != self.cluster.generation:
            raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION, "stale generation",
                                            txn_requires_abort=True))
        self.offsets.update({(tp.topic, tp.partition): tp.offset for tp in offsets})

    def commit_transaction(self, timeout: float) -> None:
        if self.cluster.commit_gate is not None:
            assert self.cluster.commit_gate.wait(timeout), "the test never let the commit through"
        self._check_fenced()
        if self.cluster.commit_failures:
            raise KafkaException(self.cluster.commit_failures.pop(0))
        assert self.transaction is not None
        self.cluster.outputs += self.transaction
        self.cluster.committed.update(self.offsets)
        self.cluster.sent_offsets.append(self.offsets)
        self.transaction, self.offsets = None, {}

    def abort_transaction(self, timeout: float) -> None:
        self._check_fenced()
        self.transaction, self.offsets = None, {}


class Echo:
    """A stateless processor: one output per record, its value the record's."""

    topics = (SOURCE,)
    tables = ()

    def process(self, messages: list[FakeMessage], outputs: Worker, tables: object) -> int:
        for message in messages:
            outputs.produce(OUTPUT, message.key(), message.value())
        return len(messages)


@dataclass
class Harness:
    cluster: Cluster
    worker: Worker
    consumer: FakeConsumer
    producers: list[FakeProducer]

    def step_until(self, condition: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            assert time.monotonic() < deadline, f"never: {what}"
            self.worker.step()

    def checkpoint(self) -> None:
        """Take a checkpoint now and step until it has finished."""
        self.worker.next_checkpoint = 0.0
        self.worker.step()
        self.step_until(lambda: self.worker.checkpoint.phase is Phase.IDLE, "the checkpoint finished")

    def consumed(self) -> None:
        """Step (once at least: a rebalance waits for the next consume) until every record of an assigned partition
        was read."""
        self.worker.step()
        self.step_until(lambda: all(self.consumer.positions[p] == len(self.cluster.records.get(p, []))
                                    for p in self.consumer.positions), "the assigned partitions read")


def harness(tmp_path: Path, exactly_once: bool, strategy: str = "cooperative-sticky") -> Harness:
    cluster = Cluster()
    consumers: list[FakeConsumer] = []
    producers: list[FakeProducer] = []

    def consumer(config: dict[str, Any]) -> FakeConsumer:
        consumers.append(FakeConsumer(config, cluster))
        return consumers[-1]

    def producer(config: dict[str, Any]) -> FakeProducer:
        producers.append(FakeProducer(config, cluster))
        return producers[-1]

    settings = RuntimeSettings(processing_guarantee="exactly_once" if exactly_once else "at_least_once",
                               data_dir=tmp_path, state_store="memory", worker_id="w1",
                               assignment_strategy=strategy, commit_interval_ms=60_000)
    worker = Worker(settings, "group", "test-worker", [Echo()],
                    clients=KafkaClients(consumer=consumer, producer=producer, admin=lambda config: None))
    worker.subscribe()
    return Harness(cluster, worker, consumers[0], producers)


GUARANTEES = pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])


@GUARANTEES
def test_a_partial_revocation_commits_what_was_processed_and_the_kept_partitions_go_on(
        tmp_path: Path, exactly_once: bool) -> None:
    h = harness(tmp_path, exactly_once)
    h.cluster.append(0, "a0", "a1", "a2")
    h.cluster.append(1, "b0", "b1", "b2")
    h.consumer.rebalance("assign", 0, 1)
    h.consumed()

    h.consumer.rebalance("revoke", 1)
    h.worker.step()
    assert h.cluster.committed == {(SOURCE, 0): 3, (SOURCE, 1): 3}, "the revocation's checkpoint commits both"
    assert sorted(h.cluster.seen()) == ["a0", "a1", "a2", "b0", "b1", "b2"]
    assert h.consumer.calls == [("incremental_assign", [(SOURCE, 0), (SOURCE, 1)]),
                                ("incremental_unassign", [(SOURCE, 1)])], "only the moved partition is given up"
    assert h.worker.assigned == {(SOURCE, 0)}

    h.cluster.append(0, "a3")
    h.cluster.append(1, "b3")  # its new owner's now
    h.consumed()
    h.checkpoint()
    assert h.cluster.committed == {(SOURCE, 0): 4, (SOURCE, 1): 3}
    assert h.cluster.seen()[6:] == ["a3"]
    if exactly_once:
        assert h.cluster.sent_offsets[-1] == {(SOURCE, 0): 4}, "the transaction's offsets: owned partitions only"


def test_an_eager_revocation_gives_up_every_partition(tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=False, strategy="range")
    h.cluster.append(0, "a0")
    h.cluster.append(1, "b0")
    h.consumer.rebalance("assign", 0, 1)
    h.consumed()
    h.consumer.rebalance("revoke", 0, 1)
    h.worker.step()
    assert h.consumer.calls == [("assign", [(SOURCE, 0), (SOURCE, 1)]), ("unassign", [(SOURCE, 0), (SOURCE, 1)])]
    assert (h.cluster.committed, h.worker.assigned) == ({(SOURCE, 0): 1, (SOURCE, 1): 1}, set())


@GUARANTEES
def test_lost_partitions_commit_nothing_and_their_records_are_reread_when_assigned_again(
        tmp_path: Path, exactly_once: bool) -> None:
    h = harness(tmp_path, exactly_once)
    h.cluster.append(0, "a0", "a1", "a2")
    h.consumer.rebalance("assign", 0)
    h.consumed()

    h.consumer.rebalance("lost", 0)
    h.worker.step()
    assert (h.cluster.committed, h.worker.assigned) == ({}, set())
    if exactly_once:
        assert h.cluster.outputs == [], "the open transaction was aborted"

    h.consumer.rebalance("assign", 0)
    h.consumed()
    h.checkpoint()
    assert h.cluster.committed == {(SOURCE, 0): 3}
    expected = ["a0", "a1", "a2"]
    assert h.cluster.seen() == (expected if exactly_once else expected * 2)


def test_a_fenced_producer_is_replaced_and_the_uncommitted_records_are_redone_once(tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=True)
    h.cluster.append(0, "a0", "a1")
    h.consumer.rebalance("assign", 0)
    h.consumed()
    h.checkpoint()
    h.cluster.append(0, "a2", "a3")
    h.consumed()

    FakeProducer({"transactional.id": "group-w1", "on_delivery": None}, h.cluster).init_transactions(1)
    h.checkpoint()
    assert h.cluster.committed == {(SOURCE, 0): 2}, "the fenced transaction committed nothing"
    assert len(h.producers) == 2 and h.producers[0].purged, "the fenced producer was replaced"
    assert h.consumer.seeks[-1] == ((SOURCE, 0), 2), "rewound to the committed offset"

    h.consumed()
    h.checkpoint()
    assert (h.cluster.committed, h.cluster.seen()) == ({(SOURCE, 0): 4}, ["a0", "a1", "a2", "a3"])


def test_a_transaction_that_must_be_aborted_is_redone_once_and_a_retriable_failure_is_retried(
        tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=True)
    h.cluster.append(0, "a0", "a1")
    h.consumer.rebalance("assign", 0)
    h.consumed()
    h.cluster.commit_failures = [KafkaError(KafkaError._TIMED_OUT, "coordinator slow", retriable=True),
                                 KafkaError(KafkaError.INVALID_TXN_STATE, "must abort", txn_requires_abort=True)]
    h.checkpoint()
    assert (h.cluster.committed, h.cluster.outputs) == ({}, [])
    assert h.consumer.seeks[-1] == ((SOURCE, 0), -2), "rewound to the beginning: nothing committed yet"
    assert len(h.producers) == 1, "an abortable failure keeps the producer"

    h.consumed()
    h.cluster.commit_failures = [KafkaError(KafkaError._TIMED_OUT, "coordinator slow", retriable=True)]
    h.checkpoint()
    assert (h.cluster.committed, h.cluster.seen()) == ({(SOURCE, 0): 2}, ["a0", "a1"])


def test_a_refused_offset_commit_rereads_the_uncommitted_records(tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=False)
    h.cluster.append(0, "a0", "a1")
    h.consumer.rebalance("assign", 0)
    h.consumed()
    h.cluster.offset_commit_refusals = 1
    h.checkpoint()
    assert h.cluster.committed == {}
    assert h.consumer.seeks == [((SOURCE, 0), -2)]

    h.consumed()
    h.checkpoint()
    assert (h.cluster.committed, h.cluster.seen()) == ({(SOURCE, 0): 2}, ["a0", "a1", "a0", "a1"])


@GUARANTEES
def test_a_failed_checkpoint_of_a_partial_revocation_rereads_the_kept_partitions(
        tmp_path: Path, exactly_once: bool) -> None:
    h = harness(tmp_path, exactly_once)
    h.cluster.append(0, "a0", "a1")
    h.cluster.append(1, "b0", "b1")
    h.consumer.rebalance("assign", 0, 1)
    h.consumed()
    if exactly_once:
        h.cluster.commit_failures = [KafkaError(KafkaError.INVALID_TXN_STATE, "must abort", txn_requires_abort=True)]
    else:
        h.cluster.offset_commit_refusals = 1

    h.consumer.rebalance("revoke", 1)
    h.worker.step()
    assert h.cluster.committed == {}
    assert (h.worker.assigned, h.consumer.seeks) == ({(SOURCE, 0)}, [((SOURCE, 0), -2)]), \
        "the kept partition is reread from its committed offset once the callback returned"

    h.consumed()
    h.checkpoint()
    assert h.cluster.committed == {(SOURCE, 0): 2}
    if exactly_once:
        assert h.cluster.seen() == ["a0", "a1"], "the revoked partition's records are its next owner's"


def test_outputs_held_while_a_checkpoint_drains_are_produced_once_it_has_drained(tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=False)
    h.cluster.append(0, "a0")
    h.consumer.rebalance("assign", 0)
    h.consumed()
    h.worker.next_checkpoint = 0.0
    h.worker.step()
    assert h.worker.checkpoint.phase is Phase.DRAINING

    h.cluster.append(0, "a1")  # processed while the checkpoint drains: held, then produced
    h.step_until(lambda: h.worker.checkpoint.phase is Phase.IDLE, "the checkpoint finished")
    h.worker.step()
    assert (h.cluster.seen(), h.worker.held) == (["a0", "a1"], [])
    assert h.cluster.committed == {(SOURCE, 0): 1}, "the checkpoint's offsets cover none of the held outputs' input"


def test_the_loop_goes_on_while_a_transaction_commits_and_its_outputs_open_the_next_one(tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=True)
    h.cluster.append(0, "a0")
    h.consumer.rebalance("assign", 0)
    h.consumed()
    h.cluster.commit_gate = threading.Event()
    h.worker.next_checkpoint = 0.0
    h.worker.step()
    assert h.worker.checkpoint.phase is Phase.DRAINING, "the transaction is being committed on the helper thread"

    h.cluster.append(0, "a1")
    h.worker.step()
    assert (h.worker.held, h.cluster.outputs) == ([(OUTPUT, b"a1", b"a1", -1, None)], []), \
        "processed while the transaction commits, its output held: no record can join it"

    h.cluster.commit_gate.set()
    h.step_until(lambda: h.worker.checkpoint.phase is Phase.IDLE, "the transaction committed")
    assert (h.cluster.committed, h.cluster.seen()) == ({(SOURCE, 0): 1}, ["a0"])
    assert h.worker.held == [] and h.producers[0].transaction == [b"a1"], "the held output opened the next one"

    h.checkpoint()
    assert (h.cluster.committed, h.cluster.seen()) == ({(SOURCE, 0): 2}, ["a0", "a1"])

"""An at-least-once checkpoint that drains while the loop goes on: its offsets are committed, and its state
persisted, only once everything produced before it is delivered; a delivery error commits nothing. The offsets are
committed on a helper thread, and the stores written (evenly, between batches) only once that commit
succeeded."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafka_rekey.services.runtime.checkpoint import Checkpoint
from kafka_rekey.services.runtime.failures import CheckpointFailed
from kafka_rekey.services.runtime.output_producer import OutputProducer
from kafka_rekey.services.runtime.phases import Phase
from kafka_rekey.services.runtime.state import MemoryStore, Table
from tests.support.kafka import read_topic


def _committed(consumer: Consumer, topic: str, seconds: float = 30.0) -> int:
    """The group's committed offset of the topic's partition 0 (negative: none), once the coordinator answers."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        except KafkaException as error:  # a new group's coordinator is still loading
            if time.monotonic() > deadline:
                raise
            assert error.args[0].code() in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
            time.sleep(0.2)


def _until_drained(checkpoint: Checkpoint, producer: OutputProducer, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not checkpoint.drained():
        assert time.monotonic() < deadline, "the checkpoint never drained"
        producer.client.poll(0.05)


def _until_committed(checkpoint: Checkpoint, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not checkpoint.offsets_committed():
        assert time.monotonic() < deadline, "the offset commit never returned"
        time.sleep(0.01)


@pytest.fixture
def parts(kafka_bootstrap: str,
          topic_factory: Callable[..., str]) -> tuple[Checkpoint, OutputProducer, Consumer, Table, str]:
    source, changelog = topic_factory(partitions=1, prefix="source"), topic_factory(partitions=1, prefix="changelog")
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"drain-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})
    watermarks = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "watermarks"})
    table = Table("sequences", changelog, 0, MemoryStore())
    producer = OutputProducer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 50,
                               "delivery.report.only.error": True, "message.timeout.ms": 5_000})
    checkpoint = Checkpoint(consumer, producer, watermarks, tables={("sequences", 0): table})
    yield checkpoint, producer, consumer, table, source
    consumer.close()
    watermarks.close()


def test_offsets_and_state_are_committed_only_once_the_checkpoint_has_drained(parts) -> None:
    checkpoint, producer, consumer, table, source = parts
    producer.client.produce(source, b"an output of the checkpoint", b"k")
    table.put(b"k", [1], 4)
    checkpoint.offsets[(source, 0)] = 5

    assert checkpoint.commit() is None, "an at-least-once checkpoint does not wait for the producer"
    assert checkpoint.phase is Phase.DRAINING and not checkpoint.offsets
    assert (table.get(b"k"), table.pending, table.store.get(b"k")) == ([1], {}, None)
    assert _committed(consumer, source) < 0
    table.put(b"k", [2], 5)  # the loop goes on while it drains
    checkpoint.offsets[(source, 0)] = 6

    _until_drained(checkpoint, producer)
    assert checkpoint.finish_drain() is None, "the offsets are committed off the loop"
    assert checkpoint.phase is Phase.COMMITTING
    _until_committed(checkpoint)
    assert table.store.get(b"k") is None, "the store is written once the commit is known to have succeeded"
    assert checkpoint.finish_commit() > 0
    assert (_committed(consumer, source), checkpoint.phase) == (5, Phase.IDLE)
    assert checkpoint.offsets == {(source, 0): 6}, "the next checkpoint's offsets were touched"

    assert table.store.get(b"k") is None, "the store is written between batches, not by the commit"
    checkpoint.persist_some()
    assert (table.committing, table.store.get(b"k") is not None, table.get(b"k")) == ({}, True, [2])


def test_committed_changes_are_written_to_the_store_at_an_even_pace(parts) -> None:
    checkpoint, producer, _consumer, table, source = parts
    checkpoint.persist_within = 3_600.0
    for offset in range(1_000):
        table.put(f"k{offset}".encode(), [offset], offset)
    checkpoint.offsets[(source, 0)] = 1_000
    checkpoint.commit()
    _until_drained(checkpoint, producer)
    checkpoint.finish_drain()
    _until_committed(checkpoint)
    checkpoint.finish_commit()

    checkpoint.persist_some()
    written = sum(table.store.get(f"k{offset}".encode()) is not None for offset in range(1_000))
    assert 1 <= written < 10, "a moment into an hour, a sliver of the changes is due"
    assert table.get(b"k999") == [999], "unwritten changes are read meanwhile"
    checkpoint.persist_within = 0.0
    checkpoint.persist_some()
    assert all(table.store.get(f"k{offset}".encode()) is not None for offset in range(1_000))
    assert (table.committing, checkpoint.persisting_since) == ({}, None)


def test_a_delivery_error_while_draining_commits_nothing_and_abandon_forgets_the_checkpoint(
        parts, topic_factory: Callable[..., str]) -> None:
    checkpoint, producer, consumer, table, source = parts
    # the broker rejects it, so the error comes in a delivery report whatever metadata the producer holds
    strict = topic_factory(partitions=1, prefix="strict", config={"max.message.bytes": "64"})
    producer.client.produce(strict, b"undeliverable" * 100, b"k")
    table.put(b"k", [1], 4)
    checkpoint.offsets[(source, 0)] = 5
    checkpoint.commit()

    _until_drained(checkpoint, producer)
    with pytest.raises(CheckpointFailed, match="delivery errors"):
        checkpoint.finish_drain()
    assert _committed(consumer, source) < 0
    checkpoint.abandon()
    assert (checkpoint.phase, table.get(b"k"), table.store.get(b"k")) == (Phase.IDLE, None, None)


def test_a_final_checkpoint_waits_for_the_producer_at_once(parts) -> None:
    checkpoint, producer, consumer, table, source = parts
    producer.client.produce(source, b"an output", b"k")
    table.put(b"k", [1], 0)
    checkpoint.offsets[(source, 0)] = 1

    assert checkpoint.commit(final=True) is not None
    assert (checkpoint.phase, _committed(consumer, source), producer.undelivered()) == (Phase.IDLE, 1, 0)
    assert table.store.get(b"k") is not None


def test_a_drained_checkpoint_reports_its_delivery_before_it_commits_and_writes_the_stores(parts) -> None:
    """The worker produces the outputs it held while draining as soon as the outputs before them are delivered:
    they wait neither for the offset commit nor for the local store's write."""
    checkpoint, producer, consumer, table, source = parts
    seen: list[tuple[int, int, bytes | None]] = []
    checkpoint.delivered = lambda: seen.append((producer.undelivered(), _committed(consumer, source),
                                                table.store.get(b"k")))
    producer.client.produce(source, b"an output of the checkpoint", b"k")
    table.put(b"k", [1], 4)
    checkpoint.offsets[(source, 0)] = 5
    checkpoint.commit()

    _until_drained(checkpoint, producer)
    checkpoint.finish_drain()
    checkpoint.finish_commit()
    checkpoint.persist_some()
    assert len(seen) == 1, "not reported once"
    undelivered, committed, stored = seen[0]
    assert undelivered == 0, "reported before the outputs were delivered"
    assert committed < 0 and stored is None, "reported after the offset commit or the store write"
    assert (_committed(consumer, source), table.store.get(b"k") is not None) == (5, True)


def test_a_failed_drain_reports_no_delivery(parts, topic_factory: Callable[..., str]) -> None:
    checkpoint, producer, _consumer, _table, source = parts
    reports: list[None] = []
    checkpoint.delivered = lambda: reports.append(None)
    small = topic_factory(partitions=1, prefix="small", config={"max.message.bytes": "1024"})
    # Larger than the topic takes: the broker refuses it, whatever the producer knew of the topic when it was sent.
    producer.client.produce(small, os.urandom(10_000), b"k")
    checkpoint.offsets[(source, 0)] = 5
    checkpoint.commit()

    _until_drained(checkpoint, producer)
    with pytest.raises(CheckpointFailed):
        checkpoint.finish_drain()
    assert reports == []


def test_a_final_checkpoint_with_nothing_to_commit_records_where_the_changelog_ends(parts) -> None:
    """Checkpoints look the changelog ends up only now and then; a stopping worker records them even when its last
    checkpoint has nothing else to do, so that the next owner of its partitions restores nothing it stored."""
    checkpoint, producer, _consumer, table, source = parts
    checkpoint.ends_recorded_at = time.monotonic()  # the last lookup was just now: the next ones skip it
    table.put(b"k", [1], 0)
    checkpoint.offsets[(source, 0)] = 1
    checkpoint.commit()
    _until_drained(checkpoint, producer)
    checkpoint.finish_drain()
    checkpoint.finish_commit()  # its changes are queued for the store: the final checkpoint writes them too

    assert checkpoint.commit(final=True) is None, "nothing was left to commit"
    assert table.store.get(b"k") is not None
    assert (table.store.changelog_offset(), table.end_recorded) == (1, True)


def test_a_refused_offset_commit_writes_no_store_and_abandon_forgets_its_changes(parts) -> None:
    checkpoint, producer, _consumer, table, _source = parts
    table.put(b"k", [1], 4)
    checkpoint.offsets[(f"rekey-no-such-topic-{uuid.uuid4().hex[:8]}", 0)] = 5  # the group refuses the commit
    checkpoint.commit()
    _until_drained(checkpoint, producer)
    checkpoint.finish_drain()

    _until_committed(checkpoint)
    with pytest.raises(CheckpointFailed, match="offset commit refused"):
        checkpoint.finish_commit()
    checkpoint.abandon()
    assert (table.get(b"k"), table.store.get(b"k")) == (None, None)


def test_a_rewind_while_the_offsets_are_being_committed_keeps_what_they_committed(parts) -> None:
    """The loop may rewind (a later delivery error, a stall) before it has seen the commit return: the state of
    the committed input is kept, the changes made since are dropped."""
    checkpoint, producer, consumer, table, source = parts
    table.put(b"k", [1], 4)
    checkpoint.offsets[(source, 0)] = 5
    checkpoint.commit()
    _until_drained(checkpoint, producer)
    checkpoint.finish_drain()
    table.put(b"k", [2], 5)  # processed after the checkpoint: uncommitted

    checkpoint.abandon()
    assert (checkpoint.phase, _committed(consumer, source)) == (Phase.IDLE, 5)
    assert (table.get(b"k"), table.pending, table.committing) == ([1], {}, {})
    assert table.store.get(b"k") is not None


def test_a_final_checkpoint_commits_the_offsets_still_being_committed_and_writes_their_changes_first(parts) -> None:
    """In a rebalance callback the final checkpoint does not wait for the helper thread's commit (librdkafka may
    answer it only after the callback): it commits those offsets itself, and writes their changes before its own."""
    checkpoint, producer, consumer, table, source = parts
    table.put(b"k", [1], 4)
    table.put(b"old", [1], 4)
    checkpoint.offsets[(source, 0)] = 5
    checkpoint.commit()
    _until_drained(checkpoint, producer)
    checkpoint.finish_drain()
    table.put(b"k", [2], 5)
    checkpoint.offsets[(source, 0)] = 6

    checkpoint.fold_commit()
    assert (checkpoint.phase, checkpoint.offsets) == (Phase.FOLDED, {(source, 0): 6}), "a newer offset was set back"
    assert checkpoint.commit(final=True) is not None
    assert _committed(consumer, source) == 6
    assert (table.store.get(b"k") is not None, table.get(b"k"), table.get(b"old")) == (True, [2], [1])


def test_a_checkpoint_with_more_changes_than_the_producer_queue_holds_waits_for_room(
        kafka_bootstrap: str, topic_factory: Callable[..., str]) -> None:
    """A busy second can change more keys than librdkafka's local queue takes at once: the changelog records wait
    for deliveries (BufferError served), none is lost and the checkpoint commits."""
    source, changelog = topic_factory(partitions=1, prefix="source"), topic_factory(partitions=1, prefix="changelog")
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"drain-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})
    watermarks = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "watermarks"})
    producer = OutputProducer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20,
                               "queue.buffering.max.messages": 10})
    table = Table("sequences", changelog, 0, MemoryStore())
    checkpoint = Checkpoint(consumer, producer, watermarks, tables={("sequences", 0): table})
    try:
        for key in range(200):
            table.put(f"k{key}".encode(), [key], key)
        checkpoint.offsets[(source, 0)] = 200

        assert checkpoint.commit(final=True) is not None
        assert _committed(consumer, source) == 200
        assert len(read_topic(kafka_bootstrap, changelog)) == 200
    finally:
        consumer.close()
        watermarks.close()

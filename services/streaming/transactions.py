"""Exactly-once for a repartitioner on faust: transactions scoped by source partition, and commits that never
overlap event processing.

Faust's transaction manager keeps one transactional producer per (topic group, partition) of the *consumed*
topics and commits a source partition's offsets through its producer, but it picks the producer for a send by
the *destination* partition. That is only atomic when input and output are co-partitioned; a repartitioner
writes to other topics and partitions (and the domain topics are not consumed at all, which makes faust fail).
Here a send made while processing an event goes through the producer of that event's source partition, whose
transaction also commits the source offsets and carries the table changelog writes: output, state and
progress commit or abort together.

Faust also commits on a timer while the agents keep running: it takes the acked offsets, then awaits while it
commits the transactions one by one, and meanwhile the agents send the outputs of later events into
transactions that then commit without those events' offsets. After a kill -9 those events are processed again
and their outputs, already visible, appear twice (faust-streaming #517; measured here: up to 875 duplicates in a
3-kill run). `CommitBarrier` keeps the two apart: a commit waits until no event is half processed, hands the
buffered table changelog writes to their transactions, and only then takes the offsets; events wait meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import faust
from faust.streams import current_event
from faust.transport.consumer import TransactionManager
from faust.types import TP, Message, RecordMetadata


class SourceScopedTransactionManager(TransactionManager):
    async def on_rebalance(self, assigned: set[TP], revoked: set[TP], newly_assigned: set[TP]) -> None:
        """Keep exactly one producer per transactional id of the new active assignment.

        faust 0.15.3 stops producers only for the ids its `revoked` set maps to, and that set missed partitions
        that moved to another worker (measured: scaling 1 -> 2 took 5 of a worker's 11 ids away and it stopped
        none). The stale producer is fenced by the new owner's; when the partition comes back faust's
        `begin_transaction` on it fails ("IN_TRANSACTION -> IN_TRANSACTION") and the first send or commit raises
        ProducerFenced, which crashes the worker (found by `rekey chaos rebalance --exactly-once`, scaling 3 -> 1).
        """
        wanted = self._tps_to_transactional_ids(assigned)
        producer: Any = self.producer  # faust's aiokafka Producer keeps its producers by transactional id
        held = set(producer._transaction_producers)
        await self._stop_transactions(sorted(held - wanted))
        # Kept producers are already in the transaction begun by the commit on revocation.
        await self._start_transactions(sorted(wanted - held))

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp: float | None,
        headers: Any,
        *,
        transactional_id: str | None = None,
    ) -> Awaitable[RecordMetadata]:
        event = current_event()
        if event is None:
            # Table changelog writes leave faust's send buffer outside any event; a changelog is co-partitioned
            # with the stream that writes it, so faust's choice by destination partition is the right one.
            return await super().send(topic, key, value, partition, timestamp, headers)
        source = event.message.tp
        group = self.app.assignor.group_for_topic(source.topic)
        return await self.producer.send(
            topic, key, value, partition, timestamp, headers,
            transactional_id=f"{self.app.conf.id}-{group}-{source.partition}",
        )


class CommitBarrier:
    """Events enter one at a time per agent (`processing`); a commit (`exclusive`) closes the door, waits for the
    events inside to finish, and opens it again when the transactions are committed. A rebalance keeps the door
    closed from the commit on revocation until the new assignment is in place, and the events agents received
    before it are not processed: the offsets of their partitions are forgotten and re-read from the commit.
    Disabled (everything passes) unless the app runs exactly-once."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.epoch = 0
        """Incremented when the door opens after a rebalance; an event received in an earlier epoch is stale."""
        self._rebalancing = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._open = asyncio.Event()
        self._open.set()

    @contextlib.asynccontextmanager
    async def processing(self, received_in_epoch: int, message: Message) -> AsyncIterator[bool]:
        """Yields whether to process the event: False for one received before the last rebalance, whose message
        is then marked acked so faust does not count its offset as processed (it is read again)."""
        if not self.enabled:
            yield True
            return
        while not self._open.is_set():
            await self._open.wait()
        if received_in_epoch != self.epoch:
            message.acked = True
            yield False
            return
        self._in_flight += 1
        self._idle.clear()
        try:
            yield True
        finally:
            # No await between here and faust's ack of the event (it runs when the agent asks for the next
            # one), so a commit woken by this sees the event acked.
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        if not self.enabled:
            yield
            return
        self._open.clear()
        try:
            await self._idle.wait()
            yield
        finally:
            if not self._rebalancing:
                self._open.set()

    def close_for_rebalance(self) -> None:
        self._rebalancing = True
        self._open.clear()

    def open_after_rebalance(self) -> None:
        self._rebalancing = False
        self.epoch += 1
        self._open.set()


_BARRIERS: weakref.WeakKeyDictionary[faust.App, CommitBarrier] = weakref.WeakKeyDictionary()


def commit_barrier(app: faust.App) -> CommitBarrier:
    """The barrier the app's agents must process each event inside (a disabled one at-least-once)."""
    return _BARRIERS.get(app) or CommitBarrier(enabled=False)


def use_exactly_once_transactions(app: faust.App) -> None:
    barrier = _BARRIERS[app] = CommitBarrier(enabled=True)
    transport: Any = app.transport
    base_consumer = transport.Consumer

    class BarrierConsumer(base_consumer):  # type: ignore[misc, valid-type]
        async def force_commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
            async with barrier.exclusive():
                await self.app.producer.buffer.flush()
                committed: bool = await super().force_commit(topics, start_new_transaction=start_new_transaction)
                return committed

        async def on_partitions_revoked(self, revoked: set[TP]) -> None:
            """Commit what was processed before faust forgets it. faust's own revocation first drops the acked
            offsets of the revoked partitions (all of them, in an eager rebalance) and only then lets the
            transaction manager act, so a commit there commits nothing; the open transactions then carry outputs
            whose offsets are never committed: aborted for a partition that moves, but committed later, next to
            their re-processed copies, for one the worker keeps (measured: 216 duplicates scaling 1 -> 3 -> 1)."""
            barrier.close_for_rebalance()
            if not await self.commit():  # False also when it only waited for a commit already under way
                await self.commit()
            await super().on_partitions_revoked(revoked)

        async def on_partitions_assigned(self, assigned: set[TP], generation_id: int = 0) -> None:
            await super().on_partitions_assigned(assigned, generation_id)
            barrier.open_after_rebalance()

    transport.Consumer = BarrierConsumer
    transport.TransactionManager = SourceScopedTransactionManager



"""A commit under exactly-once never overlaps event processing, and no event is processed across a rebalance."""

from __future__ import annotations

import asyncio

from faust.types import Message

from services.streaming.transactions import CommitBarrier


def _message() -> Message:
    return Message("interactions", 0, 7, 0.0, 0, None, b"key", b"value", None)


async def _commit_waits_for_the_event_in_flight() -> list[str]:
    barrier, order = CommitBarrier(enabled=True), []
    inside, release = asyncio.Event(), asyncio.Event()

    async def event(name: str, hold: bool) -> None:
        async with barrier.processing(barrier.epoch, _message()):
            order.append(f"{name} start")
            if hold:
                inside.set()
                await release.wait()
            order.append(f"{name} end")

    async def commit() -> None:
        async with barrier.exclusive():
            order.append("commit")
            await asyncio.sleep(0.01)
            order.append("commit done")

    first = asyncio.create_task(event("e1", hold=True))
    await inside.wait()
    committing = asyncio.create_task(commit())
    await asyncio.sleep(0.01)
    second = asyncio.create_task(event("e2", hold=False))  # arrives while the commit waits: must not start
    await asyncio.sleep(0.01)
    release.set()
    await asyncio.gather(first, committing, second)
    return order


def test_commit_waits_for_the_event_in_flight_and_later_events_wait_for_the_commit() -> None:
    assert asyncio.run(_commit_waits_for_the_event_in_flight()) == [
        "e1 start", "e1 end", "commit", "commit done", "e2 start", "e2 end"]


async def _disabled_barrier_does_not_wait() -> list[str]:
    barrier, order = CommitBarrier(enabled=False), []
    async with barrier.processing(barrier.epoch, _message()), barrier.exclusive():
        order.append("commit inside an event")
    return order


def test_at_least_once_barrier_is_a_no_op() -> None:
    assert asyncio.run(_disabled_barrier_does_not_wait()) == ["commit inside an event"]


async def _event_received_before_a_rebalance() -> list[str]:
    barrier, order = CommitBarrier(enabled=True), []
    received_in = barrier.epoch
    barrier.close_for_rebalance()
    async with barrier.exclusive():  # the commit on revocation
        order.append("commit on revocation")

    stale_message = _message()

    async def stale_event() -> None:
        async with barrier.processing(received_in, stale_message) as current:
            order.append(f"stale event processed: {current}, marked acked: {stale_message.acked}")

    waiting = asyncio.create_task(stale_event())
    await asyncio.sleep(0.01)
    order.append("partitions assigned")
    barrier.open_after_rebalance()
    await waiting
    async with barrier.processing(barrier.epoch, _message()) as current:
        order.append(f"new event processed: {current}")
    return order


def test_the_door_stays_closed_until_the_assignment_and_earlier_events_are_not_processed() -> None:
    assert asyncio.run(_event_received_before_a_rebalance()) == [
        "commit on revocation", "partitions assigned", "stale event processed: False, marked acked: True",
        "new event processed: True"]


async def _disabled_barrier_processes_everything() -> bool:
    barrier = CommitBarrier(enabled=False)
    barrier.close_for_rebalance()
    barrier.open_after_rebalance()
    async with barrier.processing(0, _message()) as current:
        return current


def test_at_least_once_processes_events_received_before_a_rebalance() -> None:
    assert asyncio.run(_disabled_barrier_processes_everything()) is True

"""A flush before a commit returns only once every buffered table write is in the Kafka producer's hands."""

from __future__ import annotations

import asyncio

import faust
from faust.transport.producer import ProducerBuffer

from services.streaming.durability import drain_buffer_on_flush


async def _flush_while_a_write_is_handed_over() -> list[str]:
    drain_buffer_on_flush()
    app = faust.App("rekey-test-durability", autodiscover=False)
    # An in-memory channel with room for one message stands in for a Kafka producer whose batch is full: handing
    # the next message over waits until the first one is taken.
    app.flow_control.resume()  # flow is paused until a worker starts
    channel = app.channel(maxsize=1)
    reader = channel.clone(is_iterator=True)
    await channel.send(value=b"first")
    buffer = ProducerBuffer(loop=asyncio.get_running_loop())
    buffer.app = app
    await buffer.start()
    order: list[str] = []
    try:
        buffer.put(channel.as_future_message(value=b"second"))
        while buffer.size:  # taken off the queue: now being handed over
            await asyncio.sleep(0.01)
        flushing = asyncio.create_task(buffer.flush())
        done, _ = await asyncio.wait([flushing], timeout=0.5)
        order.append("flushed while handing over" if done else "flush waits for the hand-over")
        first = await reader.get(timeout=5)
        order.append(f"channel took {first.value!r}")
        await asyncio.wait_for(flushing, timeout=5)
        order.append("flushed")
        second = await reader.get(timeout=5)
        order.append(f"channel took {second.value!r}")
    finally:
        await buffer.stop()
    return order


def test_flush_waits_for_a_write_still_being_handed_to_the_producer() -> None:
    assert asyncio.run(_flush_while_a_write_is_handed_over()) == [
        "flush waits for the hand-over", "channel took b'first'", "flushed", "channel took b'second'"]

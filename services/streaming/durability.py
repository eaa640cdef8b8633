"""At-least-once needs "nothing committed before its side effects are durable"; faust 0.15.3 breaks that.

Before committing offsets, faust's consumer calls `producer.flush()`, which starts with `ProducerBuffer.flush()`:
the buffer of `send_soon` messages that holds every table changelog write. That flush gives up as soon as one
message takes longer than 0.1 s to leave the buffer, so offsets can be committed while changelog writes of the
committed events are still unsent. A kill -9 then loses them; the restarted worker recovers an older sequence
from the changelog and, since the event's offset was committed, never sees that event again: the next event of
the key is given a sequence that was already used (found by `rekey chaos kill`: one (key, sequence) emitted for
two different events). `drain_buffer_on_flush` makes the flush wait until the buffer is really empty.
"""

from __future__ import annotations

import asyncio
import contextlib

from faust.transport.producer import ProducerBuffer


async def _flush_until_empty(self: ProducerBuffer) -> None:
    while self.size:
        if self.state != "running":
            raise RuntimeError("Cannot flush: Producer not Running")
        self.message_sent.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.message_sent.wait(), timeout=0.1)


def drain_buffer_on_flush() -> None:
    ProducerBuffer.flush = _flush_until_empty  # type: ignore[method-assign]

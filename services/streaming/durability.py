"""At-least-once needs "nothing committed before its side effects are durable"; faust 0.15.3 breaks that.

Before committing offsets, faust's consumer calls `producer.flush()`: first `ProducerBuffer.flush()`, for the
buffer of `send_soon` messages that holds every table changelog write, then the Kafka producer's own flush. The
buffer's flush breaks that promise two ways:
- it gives up as soon as one message takes longer than 0.1 s to leave the buffer (found by `rekey chaos kill`);
- it counts a message as gone once it is taken off the queue, while it may still wait to be handed to the Kafka
  producer (whose batch for the partition is full under load), so the producer's flush that follows does not
  wait for it (found by `rekey chaos seam`, right after the hand-off's backlog).
Either way offsets can be committed while changelog writes of the committed events are still unsent. A kill -9
then loses them; the restarted worker recovers an older sequence from the changelog and, since the event's
offset was committed, never sees that event again: the next event of the key is given a sequence that was
already used (one (key, sequence) emitted for two different events). `drain_buffer_on_flush` makes the flush
wait until the buffer is empty and no message is still being handed over.
"""

from __future__ import annotations

import asyncio
import contextlib

from faust.transport.producer import ProducerBuffer
from faust.types.tuples import FutureMessage

_send_pending = ProducerBuffer._send_pending


async def _send_pending_counted(self: ProducerBuffer, fut: FutureMessage) -> None:
    self.handing_over = getattr(self, "handing_over", 0) + 1  # type: ignore[attr-defined]
    try:
        await _send_pending(self, fut)
    finally:
        self.handing_over -= 1  # type: ignore[attr-defined]


async def _flush_until_handed_over(self: ProducerBuffer) -> None:
    while self.size or (getattr(self, "handing_over", 0) and self.state == "running"):
        if self.state != "running":
            raise RuntimeError("Cannot flush: Producer not Running")
        self.message_sent.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.message_sent.wait(), timeout=0.1)


def drain_buffer_on_flush() -> None:
    ProducerBuffer._send_pending = _send_pending_counted  # type: ignore[method-assign]
    ProducerBuffer.flush = _flush_until_handed_over  # type: ignore[method-assign]

"""Send raw records from inside a faust agent without faust's per-message Topic machinery.

Faust's `Topic.send` wraps every record in futures, a buffer and sensors; for a repartitioner that writes two or
more records per input that overhead dominates. This goes straight to the app's producer — under exactly-once
that is the transaction manager, so the record still joins the source partition's transaction. A failed
delivery crashes the worker before it can commit past the record (at-least-once: it is reprocessed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import faust


class RawSender:
    def __init__(self, app: faust.App) -> None:
        self.app = app
        self.crashing: asyncio.Future[None] | None = None

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None,
                   headers: Sequence[tuple[str, bytes]] | None = None) -> None:
        producer = await self.app.maybe_start_producer()
        future = await producer.send(topic, key, value, partition, None, list(headers) if headers else None)
        future.add_done_callback(self._crash_on_failure)

    def _crash_on_failure(self, future: asyncio.Future[object]) -> None:
        if not future.cancelled() and future.exception() is not None:
            self.crashing = asyncio.ensure_future(self.app.crash(future.exception()))  # type: ignore[arg-type]

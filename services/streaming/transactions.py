"""Exactly-once for a repartitioner on faust.

Faust's transaction manager keeps one transactional producer per (topic group, partition) of the *consumed*
topics and commits a source partition's offsets through its producer, but it picks the producer for a send by
the *destination* partition. That is only atomic when input and output are co-partitioned; a repartitioner
writes to other topics and partitions (and the domain topics are not consumed at all, which makes faust fail).
Here a send made while processing an event goes through the producer of that event's source partition, whose
transaction also commits the source offsets and carries the table changelog writes: output, state and
progress commit or abort together.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import faust
from faust.streams import current_event
from faust.transport.consumer import TransactionManager
from faust.types import RecordMetadata


class SourceScopedTransactionManager(TransactionManager):
    async def send(  # type: ignore[override]
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
            return await super().send(topic, key, value, partition, timestamp, headers)
        source = event.message.tp
        group = self.app.assignor.group_for_topic(source.topic)
        return await self.producer.send(
            topic, key, value, partition, timestamp, headers,
            transactional_id=f"{self.app.conf.id}-{group}-{source.partition}",
        )


def use_source_scoped_transactions(app: faust.App) -> None:
    app.transport.TransactionManager = SourceScopedTransactionManager  # type: ignore[misc]

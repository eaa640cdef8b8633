"""Refetch records the fetcher skipped instead of committing past them (at-least-once).

faust 0.15.3 hands its consumer thread the *live* set of active partitions; aiokafka's `fetched_records` reads
an empty set as "every partition", and faust's `getmany` then silently drops the records of partitions that are
not active at that moment (during a rebalance or a table recovery) - without seeking back. The fetch position
has moved past those records, the next record delivered lands beyond faust's read offset, `_drain_messages`
books the hole as a "gap" of offsets holding no records, and the next commit moves past records nobody processed
(found by `rekey chaos kill`: a restarted worker started at the log end on every partition and 238 events were
lost, 2 of 14 runs).

`refetch_skipped_records` checks every delivered record against the next offset expected on its partition (set
by each seek and by each delivered record). When a record lands past it, the partition is sought back to the
expected offset and the rest of the batch for it is left undelivered; the records come again from the broker.
If the refetch jumps the same way again, the offsets really hold no deliverable record (transaction markers,
compaction) and the record is delivered. Exactly-once does not use it: its topics are read read_committed, where
transaction markers make such holes on every transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import structlog
from faust.transport.consumer import Consumer
from faust.types import TP, Message

from services.streaming.metrics import REFETCHED

_log = structlog.get_logger(__name__)

_getmany = Consumer.getmany
_perform_seek = Consumer.perform_seek


@dataclass
class FetchPositions:
    """The offset each partition's next delivered record should have, and the partitions sought back once."""

    expected: dict[TP, int] = field(default_factory=dict)
    refetched_from: dict[TP, int] = field(default_factory=dict)

    def refetch_offset(self, tp: TP, offset: int) -> int | None:
        """Where to seek back to before the record at `offset` is delivered, or None to deliver it.

        A record past the expected offset is refetched once; the same jump after the refetch is a real hole.
        """
        expected = self.expected.get(tp)
        if expected is not None and offset > expected:
            if self.refetched_from.get(tp) != expected:
                self.refetched_from[tp] = expected
                return expected
            _log.info("offsets hold no records (refetched and the same again)", topic=tp.topic,
                      partition=tp.partition, first_offset=expected, next_offset=offset)
        self.refetched_from.pop(tp, None)
        self.expected[tp] = max(offset + 1, expected or 0)
        return None

    def sought(self, offsets: dict[TP, int | None]) -> None:
        """After a seek to the committed offsets (None: no committed offset, so nothing to expect)."""
        self.refetched_from.clear()
        for tp, offset in offsets.items():
            if offset is None:
                self.expected.pop(tp, None)
            else:
                self.expected[tp] = offset


def _positions(consumer: Consumer) -> FetchPositions:
    positions: FetchPositions | None = getattr(consumer, "_rekey_positions", None)
    if positions is None:
        positions = FetchPositions()
        consumer._rekey_positions = positions  # type: ignore[attr-defined]
    return positions


async def _getmany_refetching_skipped(self: Consumer, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
    if self.app.in_transaction:
        async for item in _getmany(self, timeout):
            yield item
        return
    positions = _positions(self)
    sought_back: set[TP] = set()
    async for tp, message in _getmany(self, timeout):
        if tp in sought_back:
            continue
        refetch_from = (positions.refetch_offset(tp, message.offset)
                        if self.app.topics.acks_enabled_for(tp.topic) else None)
        if refetch_from is None:
            yield tp, message
            continue
        _log.warning("fetch skipped records; seeking back to refetch them", topic=tp.topic,
                     partition=tp.partition, expected_offset=refetch_from, delivered_offset=message.offset)
        REFETCHED.labels(tp.topic).inc()
        sought_back.add(tp)
        await self.seek_wait({tp: refetch_from})  # in the consumer thread; drops what it buffered for tp


async def _perform_seek_tracked(self: Consumer) -> None:
    """faust seeks every assigned partition to its committed offset after each rebalance's recovery."""
    await _perform_seek(self)
    _positions(self).sought(dict(self._read_offset))


def refetch_skipped_records() -> None:
    Consumer.getmany = _getmany_refetching_skipped  # type: ignore[method-assign]
    Consumer.perform_seek = _perform_seek_tracked  # type: ignore[method-assign]

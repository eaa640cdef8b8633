"""Refetch records the fetcher skipped instead of committing past them (at-least-once).

faust 0.15.3 hands its consumer thread the *live* set of active partitions; aiokafka's `fetched_records` reads
an empty set as "every partition", and faust's `getmany` then silently drops the records of partitions that are
not active at that moment (during a rebalance or a table recovery) - without seeking back. The fetch position
has moved past those records, the next record delivered lands beyond faust's read offset, `_drain_messages`
books the hole as a "gap" of offsets holding no records, and the next commit moves past records nobody processed
(found by `rekey chaos kill`: a restarted worker started at the log end on every partition and 238 events were
lost, 2 of 14 runs).

`refetch_skipped_records` closes that two ways. Records faust fetched but did not deliver are seen directly: after
each batch, every partition whose fetched records were not all delivered is sought back to the first undelivered
one, unless its fetch position is not past it (a seek to the committed offsets came first). That alone covers a
batch dropped with no record after it (found by the restarted-worker ACL test: the whole second batch was fetched
and dropped while a recovery was ending, and the worker waited for records that never came). And every delivered
record is checked against the next offset expected on its partition (set by each seek and by each delivered
record). When a record lands past it, the partition is sought back to the expected offset and the rest of the
batch for it is left undelivered; the records come again from the broker. If the refetch jumps the same way
again, the offsets really hold no deliverable record (transaction markers, compaction) and the record is
delivered. Exactly-once does not use it: its topics are read read_committed, where transaction markers make such
holes on every transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from faust.transport.consumer import Consumer, RecordMap
from faust.types import TP, Message

from services.streaming.metrics import REFETCHED

_log = structlog.get_logger(__name__)

_getmany = Consumer.getmany
_perform_seek = Consumer.perform_seek
_wait_next_records = Consumer._wait_next_records


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

    def rewound(self, tp: TP, offset: int) -> None:
        """After a seek back to records that were fetched but not delivered."""
        self.refetched_from.pop(tp, None)
        self.expected[tp] = offset

    def sought(self, offsets: dict[TP, int | None]) -> None:
        """After a seek to the committed offsets (None: no committed offset, so nothing to expect)."""
        self.refetched_from.clear()
        for tp, offset in offsets.items():
            if offset is None:
                self.expected.pop(tp, None)
            else:
                self.expected[tp] = offset


def first_undelivered(fetched: Mapping[TP, Sequence[int]], last_delivered: Mapping[TP, int]) -> dict[TP, int]:
    """The first offset of each partition's fetched records that was not delivered (all delivered: absent)."""
    undelivered = {}
    for tp, offsets in fetched.items():
        delivered_up_to = last_delivered.get(tp, -1)
        later = [offset for offset in offsets if offset > delivered_up_to]
        if later:
            undelivered[tp] = later[0]
    return undelivered


def _positions(consumer: Consumer) -> FetchPositions:
    positions: FetchPositions | None = getattr(consumer, "_rekey_positions", None)
    if positions is None:
        positions = FetchPositions()
        consumer._rekey_positions = positions  # type: ignore[attr-defined]
    return positions


async def _wait_next_records_kept(self: Consumer, timeout: float) -> tuple[RecordMap | None, set[TP] | None]:
    records, active_partitions = await _wait_next_records(self, timeout)
    self._rekey_fetched = records  # type: ignore[attr-defined]
    return records, active_partitions


async def _getmany_refetching_skipped(self: Consumer, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
    if self.app.in_transaction:
        async for item in _getmany(self, timeout):
            yield item
        return
    positions = _positions(self)
    acks_enabled_for = self.app.topics.acks_enabled_for
    sought_back: set[TP] = set()
    last_delivered: dict[TP, int] = {}
    self._rekey_fetched = None  # type: ignore[attr-defined]
    async for tp, message in _getmany(self, timeout):
        if tp in sought_back:
            continue
        refetch_from = positions.refetch_offset(tp, message.offset) if acks_enabled_for(tp.topic) else None
        if refetch_from is None:
            last_delivered[tp] = message.offset
            yield tp, message
            continue
        _log.warning("fetch skipped records; seeking back to refetch them", topic=tp.topic,
                     partition=tp.partition, expected_offset=refetch_from, delivered_offset=message.offset)
        REFETCHED.labels(tp.topic).inc()
        sought_back.add(tp)
        await self.seek_wait({tp: refetch_from})  # in the consumer thread; drops what it buffered for tp
    fetched = {tp: [record.offset for record in records]
               for tp, records in (getattr(self, "_rekey_fetched", None) or {}).items()
               if tp not in sought_back and acks_enabled_for(tp.topic)}
    undelivered = first_undelivered(fetched, last_delivered)
    if undelivered:
        await _seek_back_undelivered(self, undelivered)


async def _seek_back_undelivered(self: Consumer, undelivered: dict[TP, int]) -> None:
    consumer = self._thread._ensure_consumer()  # type: ignore[attr-defined]

    async def seek_back() -> dict[TP, tuple[int, int]]:
        moved = {}
        assigned = consumer.assignment()
        for tp, offset in undelivered.items():
            position = await consumer.position(tp) if tp in assigned else offset
            if offset < position:
                consumer.seek(tp, offset)
                moved[tp] = (offset, position)
        return moved

    moved = await self._thread.call_thread(seek_back)  # type: ignore[attr-defined]
    positions = _positions(self)
    for tp, (offset, position) in moved.items():
        _log.warning("fetched records were not delivered; seeking back to refetch them", topic=tp.topic,
                     partition=tp.partition, first_undelivered_offset=offset, fetch_position=position)
        REFETCHED.labels(tp.topic).inc()
        positions.rewound(tp, offset)


async def _perform_seek_tracked(self: Consumer) -> None:
    """faust seeks every assigned partition to its committed offset after each rebalance's recovery.

    A stream partition without a committed offset is not sought at all: it is read on from wherever the fetcher
    got to during the recovery, past the records faust dropped there, and with no offset to expect the guard
    cannot see the hole (found by `rekey chaos seam`: a worker killed before its first commit, and the restarted
    one began its sequencing partitions at their log end; the events came back only as re-translated copies, in
    another order, and keys went out of order). Such partitions are sought to their earliest offset, where
    `auto_offset_reset=earliest` says reading starts, and that offset is expected. Not under exactly-once, where
    nothing seeks back records faust drops: the extra round trips to the consumer thread leave the running fetcher
    time to fetch a batch faust drops (a restarted exactly-once `seam` worker stalled in CI).
    """
    await _perform_seek(self)
    if self.app.in_transaction:
        return
    uncommitted = [tp for tp in self.assignment()
                   if self._read_offset.get(tp) is None and self.app.topics.acks_enabled_for(tp.topic)]
    earliest = dict(await self.earliest_offsets(*uncommitted)) if uncommitted else {}
    if earliest:
        _log.info("no committed offset: reading from the earliest offset",
                  partitions={f"{tp.topic}/{tp.partition}": offset for tp, offset in earliest.items()})
        await self.seek_wait(earliest)
    _positions(self).sought({**self._read_offset, **earliest})


def refetch_skipped_records() -> None:
    Consumer._wait_next_records = _wait_next_records_kept  # type: ignore[method-assign]
    Consumer.getmany = _getmany_refetching_skipped  # type: ignore[method-assign]
    Consumer.perform_seek = _perform_seek_tracked  # type: ignore[method-assign]

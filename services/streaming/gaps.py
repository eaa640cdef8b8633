"""Commit past offsets a read_committed consumer never sees, without holding the commit back a round.

Transactional topics have offsets no record is delivered for (transaction markers, aborted records); faust
records such holes as a "gap" so the commit can move past them. faust 0.15.3's `Consumer._add_gap` stores the
hole *including* the offset of the record that follows it, which is also acked when processed: the offset is
then twice in the acked list, faust's run of consecutive offsets stops there, and the commit lags what was
processed (faust-streaming #606, robinhood/faust #625). Under exactly-once that lag is not only late: outputs of
the processed events commit in the transaction while their offsets do not, and a kill -9 replays them as
duplicates (found by `rekey chaos kill --exactly-once`: the commit stopped at the first record after 130 aborted
ones, 66 processed records later). `exclude_delivered_record_from_gaps` stores the hole alone.
"""

from __future__ import annotations

import asyncio

from faust.transport.consumer import Consumer
from faust.types import TP


async def _add_gap_before_record(self: Consumer, tp: TP, offset_from: int, offset_to: int) -> None:
    committed = self._committed_offset[tp]
    gap_for_tp = self._gap[tp]
    if committed is not None:
        offset_from = max(offset_from, committed + 1)
    # `offset_to` is the delivered record; the interval's end is exclusive.
    if offset_from < offset_to:
        gap_for_tp.addi(offset_from, offset_to)
        await asyncio.sleep(0)
        gap_for_tp.merge_overlaps()


def exclude_delivered_record_from_gaps() -> None:
    Consumer._add_gap = _add_gap_before_record  # type: ignore[method-assign]

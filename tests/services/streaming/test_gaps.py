"""The commit offset after a hole of offsets a read_committed consumer never sees (faust's own `_new_offset`)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from types import SimpleNamespace

from faust.transport.consumer import Consumer
from faust.types import TP
from intervaltree import IntervalTree

from services.streaming.gaps import _add_gap_before_record

PARTITION = TP("rekey-sequencing", 0)


def _consumer_state(committed: int) -> SimpleNamespace:
    return SimpleNamespace(_committed_offset=defaultdict(lambda: None, {PARTITION: committed}),
                           _gap=defaultdict(IntervalTree), _acked=defaultdict(list), _acked_index=defaultdict(set))


def _process(state: SimpleNamespace, offsets: list[int], add_gap: object) -> None:
    """What faust's fetch loop and acks do: a hole before a delivered record is a gap; every record is acked."""
    previous = None
    for offset in offsets:
        if previous is not None and offset - previous > 1:
            asyncio.run(add_gap(state, PARTITION, previous + 1, offset))  # type: ignore[operator]
        state._acked[PARTITION].append(offset)
        state._acked_index[PARTITION].add(offset)
        previous = offset


def test_commit_moves_past_aborted_records_to_the_last_processed_offset() -> None:
    # Processed 434..568, then 130 offsets of an aborted transaction, then 699..765 (the diagnosed run).
    state = _consumer_state(committed=434)
    _process(state, [*range(434, 569), *range(699, 766)], _add_gap_before_record)

    assert Consumer._new_offset(state, PARTITION) == 766


def test_faust_own_gap_bookkeeping_holds_the_same_commit_back() -> None:
    state = _consumer_state(committed=434)
    _process(state, [*range(434, 569), *range(699, 766)], Consumer._add_gap)

    assert Consumer._new_offset(state, PARTITION) == 700  # what the fix is for: 66 processed records uncommitted


def test_a_single_transaction_marker_between_records_is_skipped() -> None:
    state = _consumer_state(committed=10)
    _process(state, [10, 11, 13, 14], _add_gap_before_record)

    assert Consumer._new_offset(state, PARTITION) == 15

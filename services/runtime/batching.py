"""How many records the worker asks the consumer for: a batch holds about `batch_size` items, and no more than
the loop processes in `BATCH_SECONDS` at the last batch's pace.

An item is what a processor works on: a record, or each of the many envelopes an internal record of the ACL
carries. Asking for `batch_size` records whatever they carry would let one batch hold up to a hundred times
that (a sequence stage catching up reads nothing but such records): its outputs, their memory and the latency
of the records behind it with it.

The time bound is for latency: a batch's outputs leave after the whole batch, an event's envelope reaches the
sequence stage only after the batch that translated it, and a checkpoint that finished meanwhile (its held
outputs, the next transaction) is noticed only between batches, so an event waits for up to three batches. A
backlog keeps the batches large enough for their fixed costs not to matter.
"""

from __future__ import annotations

BATCH_SECONDS = 0.05


def next_request(batch_size: int, records: int, items: int, seconds: float = 0.0) -> int:
    """Records to ask for next, after a batch of `records` records holding `items` items processed in `seconds`
    (0: not timed): `batch_size` items' worth at the last batch's items per record, fewer when the last batch's
    pace would take longer than `BATCH_SECONDS` over them; at most `batch_size` records and at least one."""
    wanted = batch_size
    if seconds > 0 and items > 0:
        wanted = min(batch_size, max(1, int(items * BATCH_SECONDS / seconds)))
    if items <= records:
        return wanted
    return max(1, wanted * records // items)

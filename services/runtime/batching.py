"""How many records the worker asks the consumer for: a batch holds about `batch_size` items.

An item is what a processor works on: a record, or each of the many envelopes an internal record of the ACL
carries. Asking for `batch_size` records whatever they carry would let one batch hold up to a hundred times
that (a sequence stage catching up reads nothing but such records): its outputs, their memory and the latency
of the records behind it with it.
"""

from __future__ import annotations


def next_request(batch_size: int, records: int, items: int) -> int:
    """Records to ask for next, after a batch of `records` records holding `items` items: `batch_size` items'
    worth at the last batch's items per record, at most `batch_size` records and at least one."""
    if items <= records:
        return batch_size
    return max(1, batch_size * records // items)

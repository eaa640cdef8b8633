"""Exactly-once needs "a transaction commits an event's outputs together with that event's offset"; faust's
commit timer breaks that by committing in the middle of an event.

Faust commits on a timer, concurrently with the agents: the transaction of a source partition can be committed
while an agent is half-way through an event whose records already went into that transaction, and whose offset
(acked only when the agent takes the next event) is not in the commit. A crash then re-processes the event and
its records come out twice (found by `rekey chaos kill --exactly-once`: duplicates of exactly the events at the
committed offsets). Table changelog writes wait in faust's producer buffer and can likewise miss the
transaction of their event.

The gate: agents run each event inside `gate.event()` and ack it before leaving; a commit waits until no event
is in progress, blocks new ones, sends the buffered changelog writes into their transactions, and only then
computes and commits the offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

import faust
from faust.transport.consumer import Consumer
from faust.types import TP


class ProcessingGate:
    def __init__(self) -> None:
        self._active = 0
        self._committing = False
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def event(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._committing)
            self._active += 1
        try:
            yield
        finally:
            async with self._changed:
                self._active -= 1
                self._changed.notify_all()

    @contextlib.asynccontextmanager
    async def commit(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._committing and self._active == 0)
            self._committing = True
        try:
            yield
        finally:
            async with self._changed:
                self._committing = False
                self._changed.notify_all()


class _NoGate:
    @contextlib.asynccontextmanager
    async def event(self) -> AsyncIterator[None]:
        yield


_original_commit_tps = Consumer._commit_tps


async def _gated_commit_tps(self: Any, tps: Iterable[TP], start_new_transaction: bool) -> bool:
    gate = getattr(self.app, "rekey_gate", None)
    if not isinstance(gate, ProcessingGate):
        return await _original_commit_tps(self, tps, start_new_transaction)
    async with gate.commit():
        await self.app.producer.flush()
        return await _original_commit_tps(self, tps, start_new_transaction)


def install_gate(app: faust.App, enabled: bool) -> ProcessingGate | _NoGate:
    """A gate for the agents of `app`; with `enabled`, commits of `app` wait for it."""
    if not enabled:
        return _NoGate()
    gate = ProcessingGate()
    app.rekey_gate = gate  # type: ignore[attr-defined]
    Consumer._commit_tps = _gated_commit_tps  # type: ignore[method-assign]
    return gate

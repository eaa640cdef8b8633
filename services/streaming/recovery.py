"""Close faust's recovery race that leaves source records unprocessed and offsets stuck (faust-streaming #596).

When a worker starts with changelog data to restore, faust starts the fetcher for the changelog partitions, and
when the restore is done `Recovery.on_recovery_completed` resumes the stream partitions *before* it seeks them to
their committed offsets, with that fetcher still running. A batch fetched in between is delivered from the wrong
position: the read offsets run ahead, the records re-fetched after the seek are dropped as "already read", some are
never processed, and the commit stays behind the first missing offset for ever (found by
`test_restarted_worker_with_empty_state_continues_every_sequence`: a restarted worker stalled in about every
other run). This is faust 0.15.3's `on_recovery_completed` with the stream partitions resumed only after the seek
- the order faust itself uses when there are no tables (faust-streaming #217). The flow is not stopped for it:
stopping it also drops a standby changelog record in delivery, and a standby promoted later numbers from stale
state.

Under exactly-once faust also takes a changelog partition's highwater (where its restore ends) from
`last_stable_offset`, aiokafka's copy of the LSO *of the last fetch response*: none for a partition not fetched
yet (faust makes it -1: a standby with persisted offsets then fails the consistency check, found by `rekey chaos
rebalance --exactly-once`), and an old one for a partition fetched a while ago (a restore that ends there misses
committed records). `ask_the_broker_for_highwaters` asks with ListOffsets instead, which answers the LSO to a
read_committed consumer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from faust.tables.recovery import Recovery
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.types import TP


async def _on_recovery_completed_seeking_first(self: Recovery, generation_id: int = 0) -> None:
    app: Any = self.app
    consumer = app.consumer
    self.log.info("Restore complete!")
    await app.on_rebalance_complete.send()
    self._set_recovery_ended()
    callbacks = [asyncio.ensure_future(table.on_recovery_completed(self.actives_for_table[table],
                                                                    self.standbys_for_table[table]))
                 for table in self.tables.values()]
    if callbacks:
        await asyncio.wait(callbacks)
    assignment = consumer.assignment()
    if app.consumer_generation_id != generation_id:
        self.log.warning(f"Recovery rebalancing again app id {app.consumer_generation_id} param {generation_id}")
        return
    if assignment:
        self.log.info("Seek stream partitions to committed offsets.")
        await self._wait(consumer.perform_seek(), timeout=app.conf.broker_request_timeout)
    consumer.resume_partitions({tp for tp in assignment if not self._is_changelog_tp(tp)})
    self.completed.set()
    app.flow_control.resume()
    consumer.resume_flow()
    await app._fetcher.maybe_start()
    self.tables.on_actives_ready()
    if not app.assignor.assigned_standbys():
        self.tables.on_standbys_ready()
    app.on_rebalance_end()
    self.log.info("Worker ready")


def seek_before_fetching_after_recovery() -> None:
    Recovery.on_recovery_completed = _on_recovery_completed_seeking_first  # type: ignore[method-assign]


async def _highwaters_from_list_offsets(self: AIOKafkaConsumerThread, partitions: list[TP]) -> Any:
    return await self._ensure_consumer().end_offsets(partitions)


def ask_the_broker_for_highwaters() -> None:
    AIOKafkaConsumerThread._highwaters = _highwaters_from_list_offsets  # type: ignore[method-assign]

"""Close faust's recovery race that leaves source records unprocessed and offsets stuck (faust-streaming #596).

When a worker starts with changelog data to restore, faust starts the fetcher for the changelog partitions, and
when the restore is done `Recovery.on_recovery_completed` resumes the stream partitions *before* it seeks them to
their committed offsets, with that fetcher still running. A batch fetched in between is delivered from the wrong
position: the read offsets run ahead, the records re-fetched after the seek are dropped as "already read", some are
never processed, and the commit stays behind the first missing offset for ever (found by
`test_restarted_worker_with_empty_state_continues_every_sequence`: a restarted worker stalled in about every
other run). Here the stream partitions stay paused until the seek is done - the order faust itself uses when
there are no tables (faust-streaming #217). The flow is not stopped for it: stopping it would also drop a standby
changelog record in delivery, and a standby promoted later would number from stale state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from faust.tables.recovery import Recovery
from faust.types import TP

_original_on_recovery_completed = Recovery.on_recovery_completed


async def _on_recovery_completed_seeking_first(self: Recovery, generation_id: int = 0) -> None:
    app: Any = self.app
    consumer = app.consumer
    deferred: list[set[TP]] = []

    def defer(tps: Iterable[TP]) -> None:
        deferred.append(set(tps))

    consumer.resume_partitions = defer
    try:
        await _original_on_recovery_completed(self, generation_id)
    finally:
        del consumer.resume_partitions
    if app.consumer_generation_id == generation_id:
        assignment = consumer.assignment()
        for tps in deferred:
            consumer.resume_partitions(tps & assignment)


def seek_before_fetching_after_recovery() -> None:
    Recovery.on_recovery_completed = _on_recovery_completed_seeking_first  # type: ignore[method-assign]

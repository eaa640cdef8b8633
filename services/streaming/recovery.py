"""Close faust's recovery race that leaves source records unprocessed and offsets stuck (faust-streaming #596).

When a worker starts with changelog data to restore, faust starts the fetcher for the changelog partitions, and
when the restore is done `Recovery.on_recovery_completed` resumes the stream partitions *before* it seeks them to
their committed offsets, with that fetcher still running. A batch fetched in between is delivered from the wrong
position: the read offsets run ahead, the records re-fetched after the seek are dropped as "already read", some are
never processed, and the commit stays behind the first missing offset for ever (found by
`test_restarted_worker_with_empty_state_continues_every_sequence`: a restarted worker stalled in about every
other run). Stopping the flow first, as faust does at the start of a rebalance, means nothing reaches a stream
until the seek is done; `on_recovery_completed` resumes the flow after its seek.
"""

from __future__ import annotations

from typing import Any

from faust.tables.recovery import Recovery

_original_on_recovery_completed = Recovery.on_recovery_completed


async def _on_recovery_completed_with_flow_stopped(self: Recovery, generation_id: int = 0) -> None:
    app: Any = self.app
    app.consumer.stop_flow()
    app.flow_control.suspend()
    app.flow_control.clear()
    await app.consumer.wait_for_stopped_flow()
    await _original_on_recovery_completed(self, generation_id)


def seek_before_fetching_after_recovery() -> None:
    Recovery.on_recovery_completed = _on_recovery_completed_with_flow_stopped  # type: ignore[method-assign]

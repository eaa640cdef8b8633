"""`rekey status --worker`: a worker's restore progress (records read / to read), readiness, or why it cannot be
asked, from the worker's own readiness endpoint (no broker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafka_rekey.services.observability.http import HealthServer
from kafka_rekey.services.runtime.state import RestoreProgress
from kafka_rekey.services.status.workers import worker_state


@pytest.fixture
def restoring() -> Iterator[tuple[HealthServer, RestoreProgress]]:
    progress = RestoreProgress()
    server = HealthServer(0, ready=progress.describe, host="127.0.0.1").start()
    yield server, progress
    server.stop()
    progress.ended(progress.to_read - progress.read)  # the process's restore gauge back to 0


def test_a_restoring_worker_shows_the_records_read_and_to_read(restoring: tuple[HealthServer, RestoreProgress]
                                                               ) -> None:
    server, progress = restoring
    progress.started(2_500_000)
    progress.advanced(1_234_567)

    state = worker_state(f"127.0.0.1:{server.port}")

    assert (state.ready, state.restore_read, state.restore_to_read) == (False, 1_234_567, 2_500_000)
    assert "restoring state" in state.detail


def test_a_ready_worker_and_one_that_cannot_be_asked(restoring: tuple[HealthServer, RestoreProgress]) -> None:
    server, _ = restoring
    server.ready = lambda: True
    address = f"127.0.0.1:{server.port}"
    assert worker_state(address).ready
    server.stop()

    gone = worker_state(address)

    assert not gone.ready and gone.restore_to_read is None and gone.detail.startswith("unreachable")

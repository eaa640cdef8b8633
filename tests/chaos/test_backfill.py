"""`rekey chaos backfill` at a small scale: the Python workers of `rekey backfill` killed (kill -9) in its write
stage after a first write task committed; the job completes, its verification passes without redeliveries
allowed, and every record is in the backfilled topics exactly once (read_committed). The verification and the
other family's backfill run on the tests' Spark session."""

from __future__ import annotations

import pytest

from services.devtools.chaos.backfill import backfill_kill
from services.devtools.chaos.harness import ChaosEnv
from tests.chaos.conftest import assert_passed

pytestmark = [pytest.mark.broker, pytest.mark.registry, pytest.mark.spark]

EVENTS = 6_000  # 16 write tasks on 2 cores: several are still to run when the first commits


def test_python_workers_killed_in_the_write_stage(spark, chaos_env: ChaosEnv,  # type: ignore[no-untyped-def]
                                                   request: pytest.FixtureRequest) -> None:
    result = backfill_kill(chaos_env, EVENTS, log=print)
    assert len(result.faults) == 1
    assert_passed(result, request)

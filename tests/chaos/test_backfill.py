"""`rekey chaos backfill` at a small scale, on the standalone cluster the Spark cluster tests share: in the write
stage of `rekey backfill --master spark://...`, after a first write task committed, kill -9 of the executors'
Python workers, then, after a later task committed, kill -9 of an executor JVM. Each fault must fail a running
task (Spark's event log says so), the job completes, its verification passes without redeliveries allowed, and
every record is in the backfilled topics exactly once (read_committed). The verification and the other family's
backfill run on the tests' Spark session."""

from __future__ import annotations

import pytest

from kafka_rekey_dev.chaos.backfill import backfill_kill
from kafka_rekey_dev.chaos.harness import ChaosEnv
from kafka_rekey_dev.embedded.spark import SparkCluster
from tests.chaos.conftest import assert_passed

pytestmark = [pytest.mark.broker, pytest.mark.registry, pytest.mark.spark]

EVENTS = 6_000  # 16 write tasks on 2 one-core executors: several are still to run when the second commits


def test_python_workers_then_an_executor_jvm_killed_in_the_write_stage_on_the_cluster(  # type: ignore[no-untyped-def]
        spark, spark_cluster: SparkCluster, chaos_env: ChaosEnv, request: pytest.FixtureRequest) -> None:
    result = backfill_kill(chaos_env, EVENTS, log=print, master=spark_cluster.master_url,
                           conf=spark_cluster.session_conf())
    python_workers, executor = (fault.name for fault in result.faults)
    assert "Python workers" in python_workers and "executor JVM" in executor
    assert_passed(result, request)

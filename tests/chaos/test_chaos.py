"""Fault injection on real brokers and real ACL worker processes, at a small scale (a few thousand events).

Every test proves its fault landed while records were in flight (else the run is INVALID and fails), waits for
the ACL group to drain, then reads every output record read_committed and checks: nothing lost, dense per-key
sequences 1..n, first occurrences in order, Java-parity partitions, every poison pill in the DLQ, duplicates
only as identical (key, sequence) re-emissions and none under exactly-once. The same scenarios run at full
scale with `make soak` (tests/chaos/test_soak.py) or `rekey chaos SCENARIO --events 1000000`.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from kafka_rekey_dev.chaos.connect import connect_kill
from kafka_rekey_dev.chaos.harness import ChaosEnv
from kafka_rekey_dev.chaos.scenarios import (
    backfill_seam,
    broker_failure,
    kill_restart,
    pause,
    poison_pills,
    rebalance,
    redelivery,
    sigterm,
)
from tests.chaos.conftest import assert_passed
from tests.support.crm import cdc_catalog

pytestmark = [pytest.mark.broker, pytest.mark.registry]

EVENTS = 3000
CONNECT_EVENTS = 600  # row changes, each its own transaction: a few seconds of streaming to kill the worker in
SEAM_EVENTS = 10_000  # a live burst of 1,000 outlasts a commit; the history costs Spark little more


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])
def test_worker_killed_three_times_mid_stream(chaos_env: ChaosEnv, exactly_once: bool,
                                              request: pytest.FixtureRequest) -> None:
    result = kill_restart(chaos_env, EVENTS, exactly_once, log=print, kills=3)
    assert len(result.faults) == 3
    assert_passed(result, request)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])
def test_worker_paused_past_its_session_is_fenced(chaos_env: ChaosEnv, exactly_once: bool,
                                                   request: pytest.FixtureRequest) -> None:
    result = pause(chaos_env, EVENTS, exactly_once, log=print)
    assert len(result.faults) == 1
    assert_passed(result, request)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])
def test_rebalance_one_to_three_to_one_workers_under_load(chaos_env: ChaosEnv, exactly_once: bool,
                                                          request: pytest.FixtureRequest) -> None:
    result = rebalance(chaos_env, EVENTS, exactly_once, log=print)
    assert len(result.faults) == 2
    assert_passed(result, request)


@pytest.mark.cluster
@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])
def test_leader_broker_stopped_then_a_broker_killed(chaos_env3: ChaosEnv, exactly_once: bool,
                                                    request: pytest.FixtureRequest) -> None:
    result = broker_failure(chaos_env3, EVENTS, exactly_once, log=print)
    assert len(result.faults) == 2
    assert_passed(result, request)


def test_one_percent_poison_pills_all_dead_lettered(chaos_env: ChaosEnv, request: pytest.FixtureRequest) -> None:
    assert_passed(poison_pills(chaos_env, EVENTS, log=print), request)


def test_redelivered_source_gets_no_new_sequences(chaos_env: ChaosEnv, request: pytest.FixtureRequest) -> None:
    result = redelivery(chaos_env, EVENTS, log=print)
    assert result.total("duplicates") > 0, "a rewound group must re-emit"
    assert_passed(result, request)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])
def test_sigterm_under_load_stops_cleanly_and_reprocesses_at_most_the_uncommitted_tail(
    chaos_env: ChaosEnv, exactly_once: bool, request: pytest.FixtureRequest,
) -> None:
    assert_passed(sigterm(chaos_env, EVENTS, exactly_once, log=print), request)


@pytest.mark.spark
@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])
def test_backfill_then_live_worker_killed_right_after_the_handoff(
    spark, chaos_env: ChaosEnv, exactly_once: bool, request: pytest.FixtureRequest,  # type: ignore[no-untyped-def]
) -> None:
    """Fault scenario 6 (`spark`: the scenario's backfill runs on the tests' session, stopped before the broker)."""
    result = backfill_seam(chaos_env, SEAM_EVENTS, exactly_once, log=print)
    assert len(result.faults) == 1
    assert_passed(result, request)


# Behind `soak` until the connector's occasional stall after the restart is explained (docs/RELIABILITY.md).
@pytest.mark.soak
@pytest.mark.postgres
@pytest.mark.connect
@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_least_once", "exactly_once"])
def test_connect_worker_killed_while_debezium_streams(
    catalog_factory: Callable[..., Path], kafka_admin: AdminClient, kafka_bootstrap: str, schema_registry_url: str,
    exactly_once: bool, request: pytest.FixtureRequest,
) -> None:
    """`rekey chaos connect`: Debezium re-sends what it had not flushed; no row change twice, none lost."""
    path, catalog = cdc_catalog(catalog_factory, kafka_admin, f"crm{uuid.uuid4().hex[:8]}.public.interactions")
    workdir = Path(tempfile.mkdtemp(prefix="rekey-chaos-connect-"))
    workdir.chmod(0o755)  # the scenario's PostgreSQL runs as an unprivileged user, which must reach its data
    result = connect_kill(ChaosEnv(kafka_bootstrap, schema_registry_url, path, catalog, workdir),
                          CONNECT_EVENTS, exactly_once, log=print)
    assert len(result.faults) == 1
    assert_passed(result, request)
    shutil.rmtree(workdir, ignore_errors=True)  # kept when the run fails: its manifest, the ACL's and Connect's logs

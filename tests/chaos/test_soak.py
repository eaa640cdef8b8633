"""The chaos scenarios at full scale: `make soak` (pytest -m soak), 1,000,000 events each by default
(`REKEY_SOAK_EVENTS` to change). Same harness and checks as tests/chaos/test_chaos.py; hours on a laptop."""

from __future__ import annotations

import os

import pytest

from kafka_rekey_dev.chaos.harness import ChaosEnv
from kafka_rekey_dev.chaos.scenarios import SCENARIOS
from tests.chaos.conftest import assert_passed

pytestmark = [pytest.mark.soak, pytest.mark.broker, pytest.mark.registry, pytest.mark.timeout(3600)]

EVENTS = int(os.environ.get("REKEY_SOAK_EVENTS", "1000000"))
EXACTLY_ONCE_SCENARIOS = ("kill", "rebalance", "sigterm", "pause", "seam")
"""The default suite's exactly_once scenarios."""
OWN_SCALE = ("connect",)
"""Scenarios sized in other units than events (row changes, one PostgreSQL transaction each), run at their own scale
behind `soak` in tests/chaos/test_chaos.py."""
RUNS = [pytest.param(name, eo, id=f"{name}-{'eos' if eo else 'alo'}")
        for name in SCENARIOS if not SCENARIOS[name].cluster and name not in OWN_SCALE for eo in (False, True)
        if not eo or name in EXACTLY_ONCE_SCENARIOS]


@pytest.mark.parametrize(("scenario", "exactly_once"), RUNS)
def test_soak(chaos_env: ChaosEnv, scenario: str, exactly_once: bool, request: pytest.FixtureRequest) -> None:
    assert_passed(SCENARIOS[scenario].run(chaos_env, EVENTS, exactly_once, log=print), request)


@pytest.mark.cluster
@pytest.mark.parametrize("exactly_once", [False, True], ids=["alo", "eos"])
def test_soak_broker(chaos_env3: ChaosEnv, exactly_once: bool, request: pytest.FixtureRequest) -> None:
    assert_passed(SCENARIOS["broker"].run(chaos_env3, EVENTS, exactly_once, log=print), request)

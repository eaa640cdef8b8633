"""The migration at scale (`make soak`): `rekey bench migrate`'s run of 1,000,000 family records, its boundary at
half of history, on a fresh embedded stack: every record scanned, a start offset on every partition, and what the
group sees again counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from kafka_rekey_dev.bench.migrate import run_bench

pytestmark = [pytest.mark.soak]

EVENTS = 1_000_000


def test_a_group_moves_onto_a_family_of_a_million_records(tmp_path: Path) -> None:
    outcome = run_bench(EVENTS, tmp_path / "bench", record=False, console=Console())

    plan = outcome.result.plan
    assert plan.scanned == EVENTS and plan.unpositioned == 0
    assert len(plan.start_offsets) == outcome.partitions
    assert plan.redelivered < EVENTS // 100  # written in source order: the boundary is nearly a prefix

"""Soak (`make soak`, pytest -m soak): the backfill of history at scale in bounded memory. `rekey bench backfill`'s
runs at `REKEY_SOAK_BACKFILL_BASE` records (1,000,000 by default), then the same source topped up to
`REKEY_SOAK_BACKFILL_EVENTS` (10,000,000) backfilled with 1 GB per JVM: every record is written, in at most 11x the
time of the base run, and the JSON line with every process's peak RSS and the disk spilled is printed."""

from __future__ import annotations

import json
import os

import pytest
from rich.console import Console

from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey_dev.bench.backfill import run_bench

pytestmark = [pytest.mark.soak, pytest.mark.spark, pytest.mark.broker, pytest.mark.registry,
              pytest.mark.timeout(2 * 3600)]

BASE = int(os.environ.get("REKEY_SOAK_BACKFILL_BASE", "1000000"))
EVENTS = int(os.environ.get("REKEY_SOAK_BACKFILL_EVENTS", "10000000"))


def test_history_at_scale_completes_at_one_gigabyte_per_jvm(kafka_bootstrap: str, schema_registry_url: str) -> None:
    outcome = run_bench(events=BASE, orgs=500, master="local[*]",
                        kafka=KafkaSettings(bootstrap_servers=kafka_bootstrap),
                        registry=RegistrySettings(url=schema_registry_url), console=Console(), results=None,
                        scale_events=EVENTS, scale_memory="1g")
    print(json.dumps(outcome.to_json(), sort_keys=True))
    scale = outcome.scale
    assert scale is not None
    assert scale.written == EVENTS
    assert scale.seconds <= 11 * outcome.spark_seconds * EVENTS / (10 * BASE), (
        f"{EVENTS:,} records took {scale.seconds:.0f} s, {scale.seconds / outcome.spark_seconds:.1f}x the "
        f"{BASE:,}-record run's {outcome.spark_seconds:.0f} s")
    assert scale.peak_rss_mb["JVM"] > 0 and scale.peak_spill_mb > 0

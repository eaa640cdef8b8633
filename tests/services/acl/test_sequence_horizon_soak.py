"""Soak (`make soak`, pytest -m soak): the sequence stage's state and a cold restore of it after
`REKEY_SOAK_INTERACTIONS` interactions (10,000,000 by default), without and with the sequences horizon.

The live ACL re-keys them in waves; with the horizon, set to a few minutes, the waves before the last few are
idle past it by the end. Then the worker's stores are counted (live keys, forgotten records, bytes on disk) and
a worker started on an empty data directory restores them (`kafka_rekey_dev.bench.restore.cold_restore`).
Each run prints one JSON line of its figures and appends it to `var/soak/sequence-horizon.jsonl`."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.runtime.state import RocksStore, rocks_options
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.sequencing.horizon import is_forgotten_record
from kafka_rekey_dev.bench.restore import cold_restore
from kafka_rekey_dev.embedded.kafka import KafkaCluster
from kafka_rekey_dev.embedded.maven import REPO_ROOT
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.services.acl.test_acl_service import _env, _wait_drained

pytestmark = [pytest.mark.soak, pytest.mark.broker, pytest.mark.timeout(3 * 3600)]

INTERACTIONS = int(os.environ.get("REKEY_SOAK_INTERACTIONS", "10000000"))
WAVE_EVENTS = 1_000_000
IDLE_SECONDS = 300.0
RESULTS = REPO_ROOT / "var" / "soak" / "sequence-horizon.jsonl"


class _Worker(ServiceProcess):
    def peak_rss_mb(self) -> float:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(match.group(1)) / 1024 if match else 0.0


def _sequences_state(data_dir: Path) -> tuple[int, int]:
    """(keys with state, forgotten records) in the `sequences` stores under `data_dir`."""
    keys = forgotten = 0
    options = rocks_options(16)
    for current in data_dir.rglob("sequences/*/CURRENT"):
        store = RocksStore(current.parent, options)
        try:
            items = store.db.iter()
            items.seek_to_first()
            while items.valid():
                if is_forgotten_record(items.key()):
                    forgotten += 1
                elif not items.key().startswith(b"\x00"):
                    keys += 1
                items.next()
        finally:
            store.close()
    return keys, forgotten


@pytest.mark.parametrize("horizon", [False, True], ids=["no-horizon", "horizon"])
def test_state_and_cold_restore_after_many_interactions(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
    embedded_kafka: KafkaCluster | None, horizon: bool,
) -> None:
    if embedded_kafka is None:
        pytest.skip("the cold restore waits for the log cleaner by reading the embedded broker's log directories")
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    families = len(catalog.sources[0].feeds)
    data_dir = tmp_path / "state"
    env = {**_env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, "at_least_once"),
           "REKEY_STATE_STORE": "rocksdb", "REKEY_DATA_DIR": str(data_dir),
           "REKEY_APP_ID": f"rekey-soak-horizon-{uuid.uuid4().hex[:8]}"}
    if horizon:
        env["REKEY_SEQUENCE_IDLE_DAYS"] = str(IDLE_SECONDS / 86_400)
    acl = _Worker("acl", env, tmp_path, name="acl")
    acl.start()
    interactions = events = wave = 0
    try:
        while interactions < INTERACTIONS:
            summary = generate_to_topic(kafka_bootstrap, source, WAVE_EVENTS, 200, late_rate=0.0, seed=1_000 + wave)
            interactions, events, wave = interactions + summary.interactions, events + summary.events, wave + 1
            _wait_drained(acl, events * families, timeout=3_600)
        steady_rss_mb = acl.peak_rss_mb()
    finally:
        acl.stop()
    keys, forgotten = _sequences_state(data_dir)
    disk_mb = sum(path.stat().st_size for path in data_dir.rglob("*") if path.is_file()) / 2**20
    restore = cold_restore(lambda: _Worker("acl", env, tmp_path, name="acl-cold"), data_dir, steady_rss_mb,
                           sorted(embedded_kafka.data_dir.glob("node-*/data")), Console())
    figures = {"horizon_seconds": IDLE_SECONDS if horizon else None, "interactions": interactions,
               "events": events, "sequences_keys": keys, "forgotten_records": forgotten,
               "state_disk_mb": round(disk_mb), **restore}
    print(json.dumps(figures))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as results:
        results.write(json.dumps(figures) + "\n")
    assert restore["restore_keys"] > 0
    if horizon:
        assert forgotten > 0 and keys < interactions * families, "the horizon forgot nothing"

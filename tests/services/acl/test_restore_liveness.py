"""A worker restoring more state than its loop limit allows stays alive, because its restore keeps reading: the
liveness probe must not restart a pod in the middle of a restore that is making progress."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer

from kafka_rekey.services.runtime.state import MemoryStore, Table
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.embedded.workers import ServiceProcess

pytestmark = pytest.mark.broker

PARTITIONS = 4
CHANGELOG_RECORDS = 3_000_000
LOOP_LIMIT_S = 1.0


def _fill_changelog(bootstrap: str, changelog: str) -> None:
    """Changelog records of many keys, as checkpoints write them, spread over the changelog's partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "lz4", "queue.buffering.max.messages": 2_000_000})
    per_partition = CHANGELOG_RECORDS // PARTITIONS
    for partition in range(PARTITIONS):
        writer = Table("sequences", changelog, partition, MemoryStore())
        for i in range(per_partition):
            writer.put(f"org_timeline/org-{partition}:{i}".encode(), [1], 0)
        for key, value in writer.pending.items():
            while True:
                try:
                    producer.produce(changelog, value, key, partition)
                    break
                except BufferError:
                    producer.poll(0.1)
    assert producer.flush(120) == 0


class _Probe:
    """Asks /healthz and /readyz of a starting worker every 0.1 s on a thread, keeping every answer."""

    def __init__(self, worker: ServiceProcess) -> None:
        self.url = f"http://127.0.0.1:{worker.port}"
        self.health: list[int] = []
        self.restoring: list[float] = []
        """When /readyz said the worker was restoring."""
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._ask, daemon=True)

    def _ask(self) -> None:
        with httpx.Client(timeout=2) as client:
            while not self.done.wait(0.1):
                try:
                    ready = client.get(f"{self.url}/readyz")
                    self.health.append(client.get(f"{self.url}/healthz").status_code)
                except httpx.HTTPError:
                    continue  # not serving yet
                if "restoring state" in ready.text:
                    self.restoring.append(time.monotonic())


def test_a_restore_longer_than_the_loop_limit_keeps_the_worker_healthy_and_completes(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    catalog_path, _ = provisioned_catalog
    group = f"rekey-acl-{uuid.uuid4().hex[:8]}"
    env = {
        "REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "REKEY_REGISTRY_URL": schema_registry_url,
        "REKEY_CATALOG_PATH": str(catalog_path),
        "REKEY_STATE_STORE": "memory",
        "REKEY_DATA_DIR": str(tmp_path / "state"),
        "REKEY_APP_ID": group,
        "REKEY_INTERNAL_PARTITIONS": str(PARTITIONS),
        "REKEY_LIVENESS_S": str(LOOP_LIMIT_S),
        "REKEY_RESTORE_STALL_S": "30",
    }
    first = ServiceProcess("acl", env, tmp_path, name="acl-first", args=("--stage", "sequence")).start()
    first.terminate()  # its changelogs exist now
    _fill_changelog(kafka_bootstrap, f"{group}-sequences-changelog")

    worker = ServiceProcess("acl", env, tmp_path, name="acl-restoring", args=("--stage", "sequence"))
    probe = _Probe(worker)
    probe.thread.start()
    try:
        worker.start(ready_timeout=240)  # ready once the restore is done
        probe.done.set()
        probe.thread.join()
        restored = next(float(line.split()[1]) for line in worker.metrics().splitlines()
                        if line.startswith("rekey_restore_read_records_total "))
    finally:
        probe.done.set()
        worker.stop()
    restoring_for = probe.restoring[-1] - probe.restoring[0] if probe.restoring else 0.0
    assert restoring_for > 2 * LOOP_LIMIT_S, f"the restore was too short to test: {restoring_for:.1f}s"
    assert restored >= CHANGELOG_RECORDS
    assert probe.health and set(probe.health) == {200}, f"/healthz answered {sorted(set(probe.health))}"

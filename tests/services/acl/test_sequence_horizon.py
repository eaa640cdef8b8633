"""The sequences horizon on the real broker: keys idle past `REKEY_SEQUENCE_IDLE_DAYS` are forgotten (their
state tombstoned in the changelog, their last sequence kept in a forgotten record), and a later event of such a
key continues its numbering, on the worker that forgot it and on a new one restored from the changelog."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kafka_rekey.services.check.run import manifest_expectations
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.services.acl.test_acl_service import _check, _env, _generate, _wait_drained
from tests.support.kafka import read_topic
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

IDLE_SECONDS = 2.0


def test_an_event_of_a_forgotten_key_continues_its_numbering_also_after_a_cold_restore(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    families = len(catalog.sources[0].feeds)
    env = {**_env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, "at_least_once"),
           "REKEY_STATE_STORE": "rocksdb", "REKEY_SEQUENCE_IDLE_DAYS": str(IDLE_SECONDS / 86_400),
           "REKEY_BATCH_SIZE": "40"}  # many batches: each sweeps, and the keys it forgot come back in the next ones
    manifests = [tmp_path / f"run-{n}.jsonl" for n in range(3)]
    combined = tmp_path / "all.jsonl"
    forgotten = []
    produced_before = 0
    for run, manifest in enumerate(manifests):
        # Same orgs every run: the org-keyed timeline's keys were idle past the horizon when their next events come.
        _generate(kafka_bootstrap, source, manifest, 600, seed=20 + run)
        combined.write_text("".join(m.read_text() for m in manifests[:run + 1]))
        total = len(manifest_expectations(combined, source)[0]) * families
        # Runs 1 and 2 on an empty data directory: all they know is restored from the changelogs.
        acl = ServiceProcess("acl", {**env, "REKEY_DATA_DIR": str(tmp_path / f"state-{run}")}, tmp_path,
                             name=f"acl-{run}").start()
        try:
            _wait_drained(acl, total - produced_before)
            if run > 0:
                wait_until(lambda a=acl: a.metric("rekey_sequences_forgotten_total") > 0, 30, "keys forgotten")
            forgotten.append(acl.metric("rekey_sequences_forgotten_total"))
        finally:
            acl.stop()
        produced_before = total
        idle_from = time.time() + IDLE_SECONDS
        wait_until(lambda until=idle_from: time.time() > until, IDLE_SECONDS + 5, "the keys idle past the horizon")
    assert forgotten[1] > 0 and forgotten[2] > 0, forgotten
    _check(catalog, kafka_bootstrap, schema_registry_url, combined, source, exactly_once=False)
    changelog = read_topic(kafka_bootstrap, f"{env['REKEY_APP_ID']}-sequences-changelog")
    assert any(record.value is None for record in changelog), "no forgotten key was tombstoned"

"""The live ACL service as a real process on the real broker and registry: every valid source record reaches
each family once, on its Java-parity partition, with dense per-key sequences; poison pills reach the DLQ with
their context; a worker restarted with empty local state continues every key's sequence."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from kafka_rekey.services.check.drain import wait_drained
from kafka_rekey.services.check.run import manifest_expectations, run_check
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.kafka import read_topic
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

HOT_ORGS = ("org-acme", "org-globex", "org-initech")


def _env(catalog_path: Path, bootstrap: str, registry: str, tmp_path: Path, guarantee: str) -> dict[str, str]:
    return {
        "REKEY_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "REKEY_REGISTRY_URL": registry,
        "REKEY_CATALOG_PATH": str(catalog_path),
        "REKEY_STATE_STORE": "memory",
        "REKEY_DATA_DIR": str(tmp_path / "state"),
        "REKEY_APP_ID": f"rekey-acl-{uuid.uuid4().hex[:8]}",
        "REKEY_INTERNAL_PARTITIONS": "4",
        "REKEY_PROCESSING_GUARANTEE": guarantee,
    }


def _wait_drained(acl: ServiceProcess, expected_outputs: int, timeout: float = 180) -> None:
    try:
        wait_until(lambda: acl.metric("rekey_produced_total", service="acl") >= expected_outputs,
                   timeout, f"ACL produced {expected_outputs} domain records")
    except AssertionError as error:
        produced = acl.metric("rekey_produced_total", service="acl")
        raise AssertionError(f"{error}; produced {produced:.0f}; {acl.name} log tail:\n{acl.log_tail(60)}") from None


def _generate(bootstrap: str, topic: str, manifest: Path, events: int, seed: int) -> None:
    generate_to_topic(bootstrap, topic, events, 12, hot_orgs=HOT_ORGS, malformed_rate=0.02,
                      duplicate_rate=0.03, seed=seed, manifest_path=manifest)


def _check(catalog: Catalog, bootstrap: str, registry: str, manifest: Path, source: str, exactly_once: bool,
           group: str | None = None) -> None:
    if group is not None:
        # Committed and settled, as `rekey check` expects: a transaction's markers reach the output partitions
        # a moment after its commit returns, and read_committed reads stop short of them until then.
        wait_drained({"bootstrap.servers": bootstrap}, group, [source, f"{group}-sequencing"], 60)
    for family in catalog.sources[0].feeds:
        report = run_check(KafkaSettings(bootstrap_servers=bootstrap), RegistrySettings(url=registry), catalog,
                           family, manifest, source)
        assert report.passed(exactly_once), (family, report.violations(exactly_once), report.lost[:5],
                                              report.gaps[:5], report.wrong_partition[:5])
        assert report.duplicates == 0, f"{family}: {report.duplicates} duplicates in a run without faults"


def _assert_org_activity_projected(catalog: Catalog, env: dict[str, str], tmp_path: Path, events: int) -> None:
    projection = ServiceProcess("projection", {**env, "REKEY_APP_ID": env["REKEY_APP_ID"] + "-projection"},
                                tmp_path).start()
    try:
        wait_until(lambda: projection.metric("rekey_produced_total", service="projection") >= events, 120,
                   f"projection produced {events} org-activity records")
    finally:
        projection.stop()
    topic = catalog.org_activity_topic
    records = read_topic(env["REKEY_KAFKA_BOOTSTRAP_SERVERS"], topic)
    assert len(records) == events
    partitions = catalog.topic(topic).partitions
    assert all(r.partition == partition_for(r.key.decode(), partitions) for r in records)
    assert {r.key.decode() for r in records} <= {f"org-{i:05d}" for i in range(1, 13)} | set(HOT_ORGS)


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_every_valid_record_once_on_its_partition_with_dense_sequences(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
    guarantee: str,
) -> None:
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    manifest = tmp_path / "manifest.jsonl"
    _generate(kafka_bootstrap, source, manifest, 3000, seed=1)
    events, poison = manifest_expectations(manifest, source)
    families = len(catalog.sources[0].feeds)

    env = _env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, guarantee)
    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        _wait_drained(acl, len(events) * families)
        dead_lettered = acl.metric("rekey_dead_lettered_total", service="acl")
        # The upstream duplicates can trail the last new event by a batch (a transaction under exactly-once).
        duplicates = wait_until(lambda: acl.metric("rekey_skipped_total", service="acl", reason="duplicate"), 30,
                                "the sequence stage skipped the upstream duplicates")
        stop_seconds = acl.terminate()
    finally:
        acl.stop()
    if guarantee == "at_least_once":
        _assert_org_activity_projected(catalog, env, tmp_path, len(events))
    assert stop_seconds < 30, f"clean stop took {stop_seconds:.1f}s"
    assert dead_lettered == len(poison)
    assert duplicates > 0
    _check(catalog, kafka_bootstrap, schema_registry_url, manifest, source, guarantee == "exactly_once",
           env["REKEY_APP_ID"])

    sources = {(r.partition, r.offset): r for r in read_topic(kafka_bootstrap, source)}
    dead = read_topic(kafka_bootstrap, catalog.dlq_topic)
    assert len(dead) == len(poison)
    for record in dead:
        headers = {k: v.decode() for k, v in record.headers.items()}
        original = sources[(int(headers["dlq.source.partition"]), int(headers["dlq.source.offset"]))]
        assert (record.key, record.value) == (original.key, original.value)
        assert headers["dlq.source.topic"] == source
        assert headers["dlq.reason"] and headers["dlq.error"] and headers["dlq.service.version"]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_the_stages_as_two_workers_write_every_record_once(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
    guarantee: str,
) -> None:
    """The chart's `stages.split`: `rekey run acl --stage sequence` and `--stage translate` as two workers of one
    group, here side by side on one host with one data directory, as two commands started there would be."""
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    manifest = tmp_path / "manifest.jsonl"
    _generate(kafka_bootstrap, source, manifest, 3000, seed=11)
    events, poison = manifest_expectations(manifest, source)
    env = _env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, guarantee)
    stages = [ServiceProcess("acl", env, tmp_path, name=f"acl-{stage}", args=("--stage", stage))
              for stage in ("sequence", "translate")]
    try:
        sequence, translate = (stage.start() for stage in stages)
        _wait_drained(sequence, len(events) * len(catalog.sources[0].feeds))
        dead_lettered = wait_until(lambda: translate.metric("rekey_dead_lettered_total", service="acl"), 30,
                                   "the translate stage dead-lettered the poison pills")
        # Both stages' offsets committed before either stops: the second to stop would otherwise commit its last
        # checkpoint while the group rebalances after the first left, and a refused final commit is only rework.
        wait_drained({"bootstrap.servers": kafka_bootstrap}, env["REKEY_APP_ID"],
                     [source, f"{env['REKEY_APP_ID']}-sequencing"], 60)
        for stage in stages:
            stage.terminate()
    finally:
        for stage in stages:
            stage.stop()
    assert dead_lettered == len(poison)
    _check(catalog, kafka_bootstrap, schema_registry_url, manifest, source, guarantee == "exactly_once",
           env["REKEY_APP_ID"])


def test_a_worker_fenced_again_and_again_keeps_running_and_stops_at_once(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    """Two workers given one `REKEY_WORKER_ID` under exactly-once (a misconfiguration) fence each other's producer
    over and over. Each replaces its producer and goes on; a SIGTERM then stops it cleanly within seconds. (A fatal
    error raised by the producer's `poll` killed the worker; a stop whose last checkpoint was fenced asked for the
    committed offsets inside the revocation until it took over a minute.)"""
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    _generate(kafka_bootstrap, source, tmp_path / "manifest.jsonl", 300000, seed=21)
    env = {**_env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, "exactly_once"),
           "REKEY_WORKER_ID": "shared"}
    first = ServiceProcess("acl", env, tmp_path, name="acl-1")
    second = ServiceProcess("acl", {**env, "REKEY_DATA_DIR": str(tmp_path / "other")}, tmp_path, name="acl-2")
    try:
        first.start()
        second.start()
        wait_until(lambda: first.log_tail(2000).count("producer unusable: replacing it") >= 2, 120,
                   "the first worker was fenced and replaced its producer twice")
        assert first.process is not None and first.process.poll() is None, first.log_tail(60)
        stop_seconds = first.terminate()
    finally:
        first.stop()
        second.stop()
    assert first.process.returncode == 0, first.log_tail(60)
    assert stop_seconds < 30, f"clean stop took {stop_seconds:.1f}s"


def test_restarted_worker_with_empty_state_continues_every_sequence(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    env = _env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, "at_least_once")
    families = len(catalog.sources[0].feeds)
    first, second, combined = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "all.jsonl"

    _generate(kafka_bootstrap, source, first, 1500, seed=7)
    acl = ServiceProcess("acl", env, tmp_path, name="acl-1").start()
    try:
        _wait_drained(acl, len(manifest_expectations(first, source)[0]) * families)
        acl.terminate()
    finally:
        acl.stop()

    # Same orgs again: the org-keyed timeline family must continue each org's sequence, not restart it.
    _generate(kafka_bootstrap, source, second, 1500, seed=8)
    combined.write_text(first.read_text() + second.read_text())
    total = len(manifest_expectations(combined, source)[0])
    fresh_state = {**env, "REKEY_DATA_DIR": str(tmp_path / "other-state")}
    acl = ServiceProcess("acl", fresh_state, tmp_path, name="acl-2").start()
    try:
        # The new process only counts what it produced itself: the second batch.
        _wait_drained(acl, (total - len(manifest_expectations(first, source)[0])) * families)
    finally:
        acl.stop()
    assert re.search(r"handoff loaded", acl.log_tail(400)) is not None
    _check(catalog, kafka_bootstrap, schema_registry_url, combined, source, exactly_once=False)


def _restores(acl: ServiceProcess) -> list[int]:
    """The changelog records each of the worker's restores applied, as it logged them."""
    return [json.loads(line)["changelog_records"] for line in acl.log_tail(400).splitlines()
            if '"state restored"' in line]


def test_a_worker_restarted_on_its_own_state_restores_nothing_it_had_stored(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    """A worker looks its changelogs' ends up only every few seconds; the one that stops records them in its local
    stores even when its last checkpoint has nothing else to do. Its successor on the same disk then reads no
    changelog record it already holds (it reread the whole tail since the last lookup: seconds of a backlog)."""
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    env = {**_env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, "at_least_once"),
           "REKEY_STATE_STORE": "rocksdb"}
    families = len(catalog.sources[0].feeds)
    first, second, combined = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "all.jsonl"

    group, kafka = env["REKEY_APP_ID"], {"bootstrap.servers": kafka_bootstrap}
    _generate(kafka_bootstrap, source, first, 1000, seed=9)
    acl = ServiceProcess("acl", env, tmp_path, name="acl-1").start()
    try:
        _wait_drained(acl, len(manifest_expectations(first, source)[0]) * families)
        wait_drained(kafka, group, [source, f"{group}-sequencing"], 60)  # checkpointed: the ends looked up
        _generate(kafka_bootstrap, source, second, 1000, seed=10)  # its changelog follows within seconds
        combined.write_text(first.read_text() + second.read_text())
        _wait_drained(acl, len(manifest_expectations(combined, source)[0]) * families)
        wait_drained(kafka, group, [source, f"{group}-sequencing"], 60)  # the last checkpoint has nothing to do
        acl.terminate()
    finally:
        acl.stop()

    acl = ServiceProcess("acl", env, tmp_path, name="acl-2").start()
    try:
        restored = sum(wait_until(lambda: _restores(acl), 60, "the restarted worker restored its state"))
    finally:
        acl.stop()
    assert restored == 0, f"the restarted worker reread {restored} changelog records it had stored"
    _check(catalog, kafka_bootstrap, schema_registry_url, combined, source, exactly_once=False)

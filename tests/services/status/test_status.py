"""`rekey status` on a running ACL: the lag on its source starts at the backlog and falls to 0; the dead letters
are counted with their reasons; the domain topics' partitions are listed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.check.run import manifest_expectations
from kafka_rekey.services.cli.main import app
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.status.collect import Status, collect, service_groups
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker


def _source_lag(status: Status, group: str, source: str) -> tuple[int, bool]:
    (lag,) = [g for g in status.lag if g.group == group and g.topic == source]
    return lag.total, lag.committed


def test_status_shows_a_running_acl_catching_up_to_zero_lag(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    manifest = tmp_path / "manifest.jsonl"
    generate_to_topic(kafka_bootstrap, source, 2000, 12, malformed_rate=0.02, seed=11, manifest_path=manifest)
    _, poison = manifest_expectations(manifest, source)
    group = f"rekey-acl-{uuid.uuid4().hex[:8]}"
    config = {"bootstrap.servers": kafka_bootstrap}
    groups = service_groups(catalog, group, f"{group}-projection", None)

    backlog, committed = _source_lag(collect(config, catalog, groups), group, source)
    assert backlog >= 2000 and not committed

    env = acl_env(kafka_bootstrap, schema_registry_url, catalog_path, tmp_path / "state", app_id=group)
    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        wait_until(lambda: _source_lag(collect(config, catalog, groups), group, source) == (0, True), 180,
                   "the ACL's lag on its source fell to 0")
        result = CliRunner().invoke(app, ["status", "--catalog", str(catalog_path), "-b", kafka_bootstrap,
                                          "--acl-group", group, "--output", "json"])
    finally:
        acl.stop()
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    (source_lag,) = [g for g in report["lag"] if g["group"] == group and g["topic"] == source]
    assert source_lag["total"] == 0 and source_lag["committed"]
    assert report["dead_letters"]["count"] >= len(poison) > 0
    assert sum(report["dead_letters"]["newest_reasons"].values()) >= 1
    domain = {s["topic"]: s for s in report["skew"]}
    family_topics = {t for f in catalog.families.values() for t in f.output_topics}
    assert set(domain) <= family_topics and domain
    assert any(sum(s["records"].values()) > 0 for s in domain.values())


def test_status_shows_catalog_drift_and_a_pending_handoff(provisioned_catalog: tuple[Path, Catalog],
                                                          kafka_bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    from kafka_rekey.services.handoff import DATA_WRITTEN, RunRecord, write_run
    from kafka_rekey.shared.handoff import OffsetRange

    catalog_path, catalog = provisioned_catalog
    config = {"bootstrap.servers": kafka_bootstrap}
    family = catalog.default_family
    topic = catalog.family(family).output_topics[0]
    assert collect(config, catalog, {}).drift == []
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    with AdminClient(config) as admin:
        admin.incremental_alter_configs([resource])[resource].result(30)
    source = catalog.sources[0].name
    run = RunRecord.create(source, family, [OffsetRange(source, {0: 0}, {0: 10})])
    run.state = DATA_WRITTEN
    write_run(config, catalog.checkpoint_topic, run)

    result = CliRunner().invoke(app, ["status", "--catalog", str(catalog_path), "-b", kafka_bootstrap, "-o", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert {"topic": topic, "setting": "retention.ms", "catalog": str(catalog.topic(topic).retention_ms),
            "actual": "60000"} in report["drift"]
    [backfill] = report["backfills"]
    assert (backfill["source"], backfill["family"], backfill["state"], backfill["run_id"]) == (
        source, family, DATA_WRITTEN, run.run_id)
    table = CliRunner().invoke(app, ["status", "--catalog", str(catalog_path), "-b", kafka_bootstrap])
    assert "hand-off pending" in table.output and "retention.ms" in table.output

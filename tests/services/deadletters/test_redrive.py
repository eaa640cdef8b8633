"""`rekey deadletters` on the real broker, registry and ACL: the `bad_timestamp` dead letters of a run, a catalog
that reads the event time where it can, a redrive, the ACL numbering every redriven event exactly once; a second
redrive sends nothing, and an event re-sent by hand anyway is dropped by the ACL's event-id dedupe."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kafka_rekey.services.check.drain import wait_drained
from kafka_rekey.services.check.run import run_check
from kafka_rekey.services.cli.main import app
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.redrive import REDRIVEN_FROM_HEADER
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.kafka import read_topic
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

# A time with an offset is read as before; anything else (a bare date-time, `yesterday`, empty) falls back on
# the record's timestamp. `2023-13-45T99:00:00Z` has the shape and stays a bad timestamp.
FIXED_SOURCE: dict[str, Any] = {"mapping": {
    "org_id": {"path": "orgId"},
    "interaction_id": {"path": "interactionId"},
    "event_id": {"path": "eventId"},
    "event_type": {"path": "eventType"},
    "event_time": [{"path": "timestamp", "pattern": r"^(\d{4}-\d\d-\d\dT.*(?:Z|[+-]\d\d:\d\d))$"},
                   {"record_timestamp": True}],
    "interaction_type": {"path": "interactionType"},
    "payload": "data",
}}


def _env(catalog_path: Path, bootstrap: str, registry: str, tmp_path: Path, app_id: str) -> dict[str, str]:
    return {"REKEY_KAFKA_BOOTSTRAP_SERVERS": bootstrap, "REKEY_REGISTRY_URL": registry,
            "REKEY_CATALOG_PATH": str(catalog_path), "REKEY_STATE_STORE": "memory",
            "REKEY_DATA_DIR": str(tmp_path / "state"), "REKEY_APP_ID": app_id, "REKEY_INTERNAL_PARTITIONS": "4"}


def _run_acl_until(env: dict[str, str], tmp_path: Path, name: str, produced: int, source: str) -> None:
    acl = ServiceProcess("acl", env, tmp_path, name=name).start()
    try:
        wait_until(lambda: acl.metric("rekey_produced_total", service="acl") >= produced, 180,
                   f"{name} produced {produced} domain records")
        wait_drained({"bootstrap.servers": env["REKEY_KAFKA_BOOTSTRAP_SERVERS"]}, env["REKEY_APP_ID"],
                     [source, f"{env['REKEY_APP_ID']}-sequencing"], 60)
    finally:
        acl.stop()


def _redrive(catalog_path: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["deadletters", "redrive", "--catalog", str(catalog_path), "--reason",
                                      "bad_timestamp", "-o", "json", *args])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_redriven_dead_letters_are_numbered_once_and_a_second_redrive_sends_nothing(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    families = catalog.sources[0].feeds
    monkeypatch.setenv("REKEY_KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("REKEY_REGISTRY_URL", schema_registry_url)
    manifest = tmp_path / "manifest.jsonl"
    generate_to_topic(kafka_bootstrap, source, 1500, 8, hot_orgs=("org-acme",), malformed_rate=0.06, seed=35,
                      manifest_path=manifest)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    events = [r for r in rows if r["kind"] == "event"]
    bad = {f"{source}/{r['partition']}/{r['offset']}": r for r in rows if r.get("malformed_reason") == "bad_timestamp"}
    assert len(bad) >= 10

    app_id = f"rekey-acl-{uuid.uuid4().hex[:8]}"
    _run_acl_until(_env(catalog_path, kafka_bootstrap, schema_registry_url, tmp_path, app_id), tmp_path, "acl-1",
                   len(events) * len(families), source)

    listed = CliRunner().invoke(app, ["deadletters", "list", "--catalog", str(catalog_path), "-o", "json"])
    assert listed.exit_code == 0, listed.output
    counts = json.loads(listed.stdout)["counts"]
    assert sum(c["count"] for c in counts if c["reason"] == "bad_timestamp") == len(bad)
    assert {c["source"] for c in counts} == {source}

    unchanged = _redrive(catalog_path, "--dry-run")
    assert (unchanged["selected"], unchanged["resent"], unchanged["left"]) == (len(bad), 0, len(bad))

    fixed = yaml.safe_load(catalog_path.read_text())
    fixed["sources"][0].pop("format")
    fixed["sources"][0].update(FIXED_SOURCE)
    fixed_path = tmp_path / "fixed-catalog.yaml"
    fixed_path.write_text(yaml.safe_dump(fixed, sort_keys=False))

    dry = _redrive(fixed_path, "--dry-run")
    first = _redrive(fixed_path)
    values = {f"{source}/{r.partition}/{r.offset}": r.value for r in read_topic(kafka_bootstrap, source)}
    still_bad = {p for p in bad if json.loads(values[p])["timestamp"] == "2023-13-45T99:00:00Z"}
    assert (first["selected"], first["resent"], first["left"]) == (len(bad), len(bad) - len(still_bad),
                                                                   len(still_bad))
    assert dry["resent"] == first["resent"]
    assert first["left_by_reason"] == ({"bad_timestamp": len(still_bad)} if still_bad else {})
    assert {r["source"] for r in first["left_records"]} == still_bad

    resent = [r for r in read_topic(kafka_bootstrap, source) if REDRIVEN_FROM_HEADER in r.headers]
    assert len(resent) == first["resent"]

    # An event that arrives twice anyway (a redrive memory lost) is the same event id from another position.
    copy = resent[0]
    producer = make_producer(KafkaSettings(bootstrap_servers=kafka_bootstrap))
    producer.produce(source, copy.value, copy.key, partition=copy.partition, headers=list(copy.headers.items()))
    assert producer.flush(30) == 0

    env = _env(fixed_path, kafka_bootstrap, schema_registry_url, tmp_path, app_id)
    acl = ServiceProcess("acl", env, tmp_path, name="acl-2").start()
    try:
        wait_until(lambda: acl.metric("rekey_produced_total", service="acl") >= first["resent"] * len(families),
                   180, "the ACL numbered the redriven events")
        wait_until(lambda: acl.metric("rekey_skipped_total", service="acl", reason="duplicate") >= len(families),
                   60, "the ACL dropped the event sent twice")
        wait_drained({"bootstrap.servers": kafka_bootstrap}, app_id, [source, f"{app_id}-sequencing"], 60)
        produced = acl.metric("rekey_produced_total", service="acl")
    finally:
        acl.stop()
    assert produced == first["resent"] * len(families)

    # What `rekey check` expects now: the redriven records are events, the ones still bad dead letters.
    redriven = {p for p in bad if p not in still_bad}
    expected = tmp_path / "manifest-after-redrive.jsonl"
    expected.write_text("".join(json.dumps({**r, "kind": "event"} if f"{source}/{r['partition']}/{r['offset']}"
                                           in redriven else r) + "\n" for r in rows))
    for family in families:
        report = run_check(KafkaSettings(bootstrap_servers=kafka_bootstrap), RegistrySettings(url=schema_registry_url),
                           catalog, family, expected, source)
        assert report.passed(True), (family, report.violations(True), report.lost[:5], report.unexpected[:5],
                                     report.renumbered[:5], report.gaps[:5])
        assert report.duplicates == 0
        assert report.records == len(events) + len(redriven), family

    second = _redrive(fixed_path)
    assert (second["resent"], second["already_redriven"], second["left"]) == (0, first["resent"], len(still_bad))


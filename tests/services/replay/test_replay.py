"""`rekey replay` on the real broker, registry and ACL: one org's records read from only the partitions that can
hold them, in sequence order per key, with their headers; bytes unchanged to a topic; a time range by offsets."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.check.drain import wait_drained
from kafka_rekey.services.cli.main import app
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.kafka import create_topic, read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker


def _replay(catalog_path: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["replay", "--catalog", str(catalog_path), "-o", "json", *args])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_replay_reads_only_the_org_partitions_in_sequence_order(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
    kafka_admin: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    monkeypatch.setenv("REKEY_KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("REKEY_REGISTRY_URL", schema_registry_url)
    manifest = tmp_path / "manifest.jsonl"
    generate_to_topic(kafka_bootstrap, source, 2000, 12, hot_orgs=("org-acme",), seed=7, manifest_path=manifest)
    events = [json.loads(line) for line in manifest.read_text().splitlines()]
    events = [e for e in events if e["kind"] == "event"]
    env = acl_env(kafka_bootstrap, schema_registry_url, catalog_path, tmp_path / "state")
    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        families = len(catalog.sources[0].feeds)
        wait_until(lambda: acl.metric("rekey_produced_total", service="acl") >= len(events) * families, 180,
                   "the ACL produced every domain record")
        wait_drained({"bootstrap.servers": kafka_bootstrap}, env["REKEY_APP_ID"],
                     [source, f"{env['REKEY_APP_ID']}-sequencing"], 60)
    finally:
        acl.stop()
    timeline = catalog.family("org_timeline").output_topics[0]
    everything = read_topic(kafka_bootstrap, timeline)
    per_org: dict[str, int] = defaultdict(int)
    for event in events:
        per_org[event["org_id"]] += 1
    org = max((o for o in per_org if o != "org-acme"), key=per_org.__getitem__)

    out = tmp_path / "org.jsonl"
    report = _replay(catalog_path, "--org", org, "--family", "org_timeline", "--to-file", str(out))
    assert report["partitions_read"] == [partition_for(org, 32)]
    assert (report["topic_partitions"], report["records_matched"]) == (32, per_org[org])
    assert report["records_scanned"] == sum(1 for r in everything if r.partition == partition_for(org, 32))
    assert report["records_scanned"] < len(everything)
    lines = _lines(out)
    assert [line["value"]["sequence"] for line in lines] == list(range(1, per_org[org] + 1))
    assert {line["value"]["org_id"] for line in lines} == {org}
    assert all(line["headers"]["seq"] == str(line["value"]["sequence"]) and "src" in line["headers"]
               for line in lines)
    assert sorted(line["value"]["event_id"] for line in lines) == sorted(
        e["event_id"] for e in events if e["org_id"] == org)

    # A salted hot org: its buckets' partitions, each bucket's records in sequence order; bytes unchanged.
    target = f"replay-{tmp_path.name[-8:]}"
    create_topic(kafka_admin, target, 4)
    hot = _replay(catalog_path, "--org", "org-acme", "--family", "org_timeline", "--to-topic", target)
    buckets = sorted({partition_for(f"org-acme:{b}", 32) for b in range(16)})
    assert hot["partitions_read"] == buckets
    assert hot["records_matched"] == per_org["org-acme"]
    originals = {(r.key, r.headers["seq"]): r for r in everything if r.key.startswith(b"org-acme:")}
    copied = read_topic(kafka_bootstrap, target)
    assert len(copied) == len(originals)
    by_key: dict[bytes, list[int]] = defaultdict(list)
    for record in sorted(copied, key=lambda r: (r.partition, r.offset)):
        original = originals[(record.key, record.headers["seq"])]
        assert (record.value, record.headers) == (original.value, original.headers)
        assert record.partition == partition_for(record.key.decode(), 4)
        by_key[record.key].append(int(record.headers["seq"]))
    assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in by_key.values())

    # A time range: offsets by timestamp, the records at or after --from and before --to.
    stamps = sorted(line["timestamp_ms"] for line in lines)
    since, until = stamps[len(stamps) // 4], stamps[3 * len(stamps) // 4]
    ranged = tmp_path / "ranged.jsonl"
    window = _replay(catalog_path, "--org", org, "--family", "org_timeline", "--from", str(since), "--to",
                     str(until), "--to-file", str(ranged))
    assert window["records_matched"] == sum(1 for s in stamps if since <= s < until)
    assert window["records_scanned"] <= report["records_scanned"]

"""Every metric the chart's Grafana dashboard and PrometheusRule use is one a running worker exports: a live ACL
on the real broker and registry (its traffic with dead letters and duplicates, checkpoints taken) is scraped on
/metrics, and each name, and each label the queries group by, is looked up in what it answered. A labelled counter
that counts only failures has no series on a healthy worker's page: its name must be declared there, and the labels
the queries group it by must be the ones the worker's metric has."""

from __future__ import annotations

import json
import re
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from prometheus_client import Counter
from prometheus_client.parser import text_string_to_metric_families

from kafka_rekey.services.check.run import manifest_expectations
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.runtime.metrics import CHECKPOINT_FAILURES
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.waiting import wait_until

from .rendering import full_name, render

pytestmark = pytest.mark.broker

METRIC = re.compile(r"\b((?:rekey|process)_[a-z_]+)\b")
GROUPED = re.compile(r"\bby \(([a-z_, ]+)\) \(\(?(?:(?:rate|delta|increase)\()?((?:rekey|process)_[a-z_]+)\b")
"""`sum by (service, reason) (rate(rekey_dead_lettered_total[5m]))`: the labels and the metric they group."""
NO_SERIES_UNTIL_A_FAILURE = {"rekey_checkpoint_failures_total": CHECKPOINT_FAILURES}


def _expressions() -> list[str]:
    manifests = render({"dashboards": {"enabled": True}, "alerts": {"enabled": True}})
    dashboard = json.loads(manifests.get("ConfigMap", full_name("dashboard"))["data"]["rekey.json"])
    rules = manifests.get("PrometheusRule", full_name("alerts"))["spec"]["groups"]
    return ([target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
            + [rule["expr"] for group in rules for rule in group["rules"]])


def _declared(text: str) -> set[str]:
    """The sample names of every family a /metrics page declares (`# TYPE`), with or without samples."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    return {family.name + suffix for family in text_string_to_metric_families(text)
            for suffix in suffixes.get(family.type, ("",))}


def _has_labels(metric: Counter, labels: set[str]) -> bool:
    try:
        metric.labels(**dict.fromkeys(labels, "probe"))
    except ValueError:  # other label names than the metric's
        return False
    metric.remove(*["probe"] * len(labels))
    return True


def _scraped(text: str) -> dict[str, set[str]]:
    """Each sample name of a /metrics page and the label names its samples carry."""
    labels: dict[str, set[str]] = defaultdict(set)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels[sample.name] |= set(sample.labels)
    return labels


def test_every_metric_and_grouping_label_of_the_dashboard_and_alerts_is_on_a_live_workers_page(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    expressions = _expressions()
    used = {name for expr in expressions for name in METRIC.findall(expr)}
    grouped = [(set(map(str.strip, labels.split(","))), name) for expr in expressions
               for labels, name in GROUPED.findall(expr)]
    assert {"rekey_consumer_lag", "rekey_dead_lettered_total", "rekey_checkpoint_seconds_bucket"} <= used
    assert {name for _, name in grouped} >= {"rekey_dead_lettered_total", "rekey_skipped_total"}

    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    manifest = tmp_path / "manifest.jsonl"
    generate_to_topic(kafka_bootstrap, source, 2_000, 12, malformed_rate=0.05, duplicate_rate=0.05, seed=5,
                      manifest_path=manifest)
    events, _ = manifest_expectations(manifest, source)
    env = {"REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REKEY_REGISTRY_URL": schema_registry_url,
           "REKEY_CATALOG_PATH": str(catalog_path), "REKEY_STATE_STORE": "memory",
           "REKEY_DATA_DIR": str(tmp_path / "state"), "REKEY_APP_ID": f"rekey-acl-{uuid.uuid4().hex[:8]}",
           "REKEY_INTERNAL_PARTITIONS": "4", "REKEY_COMMIT_INTERVAL_MS": "500"}
    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        expected = len(events) * len(catalog.sources[0].feeds)
        wait_until(lambda: acl.metric("rekey_produced_total", service="acl") >= expected, 180,
                   f"the ACL produced {expected} domain records")
        wait_until(lambda: acl.metric("rekey_skipped_total", service="acl", reason="duplicate") > 0, 30,
                   "the sequence stage skipped the duplicates")
        wait_until(lambda: acl.metric("rekey_checkpoint_seconds_count", service="acl") > 0, 30,
                   "a checkpoint completed")
        wait_until(lambda: "rekey_consumer_lag" in _scraped(acl.metrics()), 60,
                   "the lag gauges exported (the worker exports them every few seconds)")
        text = acl.metrics()
    finally:
        acl.stop()

    page = _scraped(text)
    assert sorted(used - page.keys() - NO_SERIES_UNTIL_A_FAILURE.keys()) == []
    assert sorted(NO_SERIES_UNTIL_A_FAILURE.keys() - _declared(text)) == []
    missing = {name: sorted(labels - page[name]) for labels, name in grouped
               if name not in NO_SERIES_UNTIL_A_FAILURE and labels - page[name]}
    assert missing == {}
    assert [name for labels, name in grouped if name in NO_SERIES_UNTIL_A_FAILURE
            and not _has_labels(NO_SERIES_UNTIL_A_FAILURE[name], labels)] == []

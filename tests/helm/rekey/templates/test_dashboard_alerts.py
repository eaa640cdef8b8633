"""templates/configmap-dashboard.yaml and templates/prometheusrule.yaml: the Grafana dashboard and the alerts,
off by default; every metric they use is one the services' registry exports; the rules pass `promtool check
rules` and `promtool test rules` on synthetic series for every alert."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..rendering import full_name, render

HERE = Path(__file__).resolve().parent.parent
ON = {"dashboards": {"enabled": True}, "alerts": {"enabled": True}}
METRIC = re.compile(r"\b((?:rekey|process)_[a-z_]+)\b")


def _dashboard(values: dict[str, Any]) -> dict[str, Any]:
    config_map = render(values).get("ConfigMap", full_name("dashboard"))
    document: dict[str, Any] = json.loads(config_map["data"]["rekey.json"])
    return document


def _rules(values: dict[str, Any]) -> dict[str, Any]:
    rule: dict[str, Any] = render(values).get("PrometheusRule", full_name("alerts"))
    return rule


def _expressions() -> list[str]:
    exprs = [target["expr"] for panel in _dashboard(ON)["panels"] for target in panel["targets"]]
    return exprs + [rule["expr"] for group in _rules(ON)["spec"]["groups"] for rule in group["rules"]]


def _exported() -> set[str]:
    """Sample names the services' /metrics can carry: the runtime's metrics in the process's default registry."""
    import prometheus_client

    import kafka_rekey.services.runtime.metrics
    import kafka_rekey.services.runtime.state  # noqa: F401 - both register their metrics

    names: set[str] = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
    for family in prometheus_client.REGISTRY.collect():
        names |= {family.name + suffix for suffix in suffixes.get(family.type, ("",))}
    return names


def test_off_by_default() -> None:
    manifests = render()
    assert manifests.find("ConfigMap", full_name("dashboard")) is None
    assert manifests.all("PrometheusRule") == []


def test_the_dashboard_is_a_sidecar_configmap_with_every_panel_asked() -> None:
    values = {"dashboards": {"enabled": True, "namespace": "monitoring", "label": "grafana_dashboard",
                             "labelValue": "yes"}}
    config_map = render(values).get("ConfigMap", full_name("dashboard"))
    assert config_map["metadata"]["namespace"] == "monitoring"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "yes"
    dashboard = _dashboard(values)
    titles = " | ".join(panel["title"] for panel in dashboard["panels"]).lower()
    for topic in ("lag", "events/s", "dead letters", "checkpoint", "skew", "rss"):
        assert topic in titles, topic
    release = next(v for v in dashboard["templating"]["list"] if v["name"] == "release")
    assert release["query"] == "demo-rekey"


def test_every_metric_the_dashboard_and_rules_use_is_exported() -> None:
    used = {name for expr in _expressions() for name in METRIC.findall(expr)}
    assert used >= {"rekey_consumer_lag", "rekey_dead_lettered_total", "rekey_checkpoint_seconds_bucket",
                    "rekey_checkpoint_failures_total", "rekey_restore_remaining_records",
                    "process_resident_memory_bytes"}
    assert used - _exported() == set()


def test_alert_thresholds_come_from_values() -> None:
    values = {"alerts": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}, "deadLettersPerSecond": 0.5,
                         "lagGrowingFor": "30m", "workerDownFor": "2m", "checkpointFailures": 3,
                         "checkpointFailuresWindow": "1h", "restoreRunningFor": "45m"}}
    rule = _rules(values)
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    rules = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    assert set(rules) == {"RekeyConsumerLagGrowing", "RekeyDeadLetterRateHigh", "RekeyCheckpointSlow",
                          "RekeyCheckpointsStopped", "RekeyCheckpointsFailing", "RekeyRestoreRunningLong",
                          "RekeyWorkerDown"}
    assert rules["RekeyDeadLetterRateHigh"]["expr"].endswith("> 0.5")
    assert (rules["RekeyConsumerLagGrowing"]["for"], rules["RekeyWorkerDown"]["for"]) == ("30m", "2m")
    assert 'up{service=~"demo-rekey-.*"}' in rules["RekeyWorkerDown"]["expr"]
    failing = rules["RekeyCheckpointsFailing"]["expr"]
    assert failing.endswith("> 3") and "offset 1h" in failing and "[1h]" in failing
    assert rules["RekeyRestoreRunningLong"]["for"] == "45m"


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool not installed (Debian package `prometheus`)")
    return found


def test_rules_pass_promtool_check_and_unit_tests(tmp_path: Path) -> None:
    promtool = _promtool()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(_rules(ON)["spec"]))
    shutil.copy(HERE / "promtool" / "rules_test.yaml", tmp_path / "rules_test.yaml")
    checked = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, "test", "rules", "rules_test.yaml"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr

"""templates/servicemonitor.yaml: optional Prometheus Operator ServiceMonitors."""

from __future__ import annotations

from ..rendering import NAMESPACE, SERVICES, full_name, render, render_ci


def test_off_by_default() -> None:
    assert render().all("ServiceMonitor") == []


def test_one_monitor_per_enabled_service_scraping_metrics() -> None:
    manifests = render_ci("production-tls-values")

    assert sorted(manifests.names("ServiceMonitor")) == sorted(full_name(s) for s in SERVICES)
    for service in SERVICES:
        monitor = manifests.get("ServiceMonitor", full_name(service))
        svc = manifests.get("Service", full_name(service))
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert monitor["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["port"] == svc["spec"]["ports"][0]["name"] == "http"
        assert endpoint["path"] == "/metrics"
        assert endpoint["interval"] == "15s"


def test_monitors_follow_enabled_services_and_namespace_override() -> None:
    values = {
        "metrics": {"serviceMonitor": {"enabled": True, "namespace": "monitoring"}},
        "services": {"sink": {"enabled": False}},
    }

    manifests = render(values)

    assert full_name("sink") not in manifests.names("ServiceMonitor")
    assert {m["metadata"]["namespace"] for m in manifests.all("ServiceMonitor")} == {"monitoring"}

"""templates/hpa.yaml: autoscaling/v2 HPAs on CPU, never above the input topic's partitions."""

from __future__ import annotations

import pytest

from ..rendering import SERVICES, full_name, render, render_ci, render_error


def test_no_hpa_by_default() -> None:
    assert render().all("HorizontalPodAutoscaler") == []


def test_hpa_bounds_and_cpu_target_per_service() -> None:
    manifests = render_ci("production-tls-values")

    acl = manifests.get("HorizontalPodAutoscaler", full_name("acl"))
    projection = manifests.get("HorizontalPodAutoscaler", full_name("projection"))

    assert acl["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": full_name("acl")}
    assert (acl["spec"]["minReplicas"], acl["spec"]["maxReplicas"]) == (3, 24)
    assert (projection["spec"]["minReplicas"], projection["spec"]["maxReplicas"]) == (2, 12)
    assert acl["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
    ]
    assert projection["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 75
    assert acl["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 600}}
    assert "behavior" not in projection["spec"]
    assert manifests.find("HorizontalPodAutoscaler", full_name("sink")) is None


def test_max_replicas_equal_to_the_partitions_is_allowed() -> None:
    manifests = render({"services": {"sink": {"inputTopicPartitions": 6, "hpa": {"enabled": True, "maxReplicas": 6}}}})

    assert manifests.get("HorizontalPodAutoscaler", full_name("sink"))["spec"]["maxReplicas"] == 6


@pytest.mark.parametrize("service", SERVICES)
def test_max_replicas_above_the_partitions_fails_rendering(service: str) -> None:
    values = {"services": {service: {"inputTopicPartitions": 8, "hpa": {"enabled": True, "maxReplicas": 9}}}}

    message = render_error(values)

    assert f"services.{service}.hpa.maxReplicas (9) exceeds services.{service}.inputTopicPartitions (8)" in message


def test_min_above_max_fails_rendering() -> None:
    message = render_error({"services": {"acl": {"hpa": {"enabled": True, "minReplicas": 5, "maxReplicas": 4}}}})

    assert "services.acl.hpa.minReplicas (5) exceeds services.acl.hpa.maxReplicas (4)" in message


def test_hpa_needs_a_cpu_request() -> None:
    values = {"services": {"acl": {"hpa": {"enabled": True}, "resources": {"requests": {"cpu": None}}}}}

    assert "set services.acl.resources.requests.cpu" in render_error(values)


def test_hpa_and_keda_are_mutually_exclusive() -> None:
    values = {"services": {"acl": {"hpa": {"enabled": True}, "keda": {"enabled": True}}}}

    assert "services.acl: hpa.enabled and keda.enabled are mutually exclusive" in render_error(values)


def test_disabled_service_with_hpa_renders_no_hpa() -> None:
    manifests = render({"services": {"acl": {"enabled": False, "hpa": {"enabled": True}}}})

    assert manifests.all("HorizontalPodAutoscaler") == []

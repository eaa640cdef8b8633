"""templates/service.yaml: a ClusterIP Service per enabled service on the http port."""

from __future__ import annotations

import pytest

from ..rendering import SERVICES, full_name, render


@pytest.mark.parametrize("service", SERVICES)
def test_service_exposes_the_http_port_of_its_own_pods(service: str) -> None:
    manifests = render()
    svc = manifests.get("Service", full_name(service))
    pod_labels = manifests.get("Deployment", full_name(service))["spec"]["template"]["metadata"]["labels"]

    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["ports"] == [{"name": "http", "port": 6066, "targetPort": "http", "protocol": "TCP"}]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    others = [s for s in SERVICES if s != service]
    for other in others:
        other_labels = manifests.get("Deployment", full_name(other))["spec"]["template"]["metadata"]["labels"]
        assert not svc["spec"]["selector"].items() <= other_labels.items()

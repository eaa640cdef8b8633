"""templates/pdb.yaml: one PodDisruptionBudget per enabled service."""

from __future__ import annotations

from ..rendering import SERVICES, full_name, render, render_ci


def test_every_service_gets_a_pdb_selecting_its_pods() -> None:
    manifests = render()

    for service in SERVICES:
        pdb = manifests.get("PodDisruptionBudget", full_name(service))
        pod_labels = manifests.get("Deployment", full_name(service))["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["maxUnavailable"] == 1
        assert "minAvailable" not in pdb["spec"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        assert pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == service


def test_min_available_wins_and_percentages_are_kept() -> None:
    manifests = render_ci("production-tls-values")

    assert manifests.get("PodDisruptionBudget", full_name("acl"))["spec"] == {
        "minAvailable": 2,
        "selector": manifests.get("PodDisruptionBudget", full_name("acl"))["spec"]["selector"],
    }
    assert manifests.get("PodDisruptionBudget", full_name("projection"))["spec"]["maxUnavailable"] == "25%"
    assert manifests.find("PodDisruptionBudget", full_name("reconciler")) is None


def test_disabled_service_has_no_pdb() -> None:
    manifests = render({"services": {"reconciler": {"enabled": False}}})

    assert manifests.find("PodDisruptionBudget", full_name("reconciler")) is None
    assert len(manifests.all("PodDisruptionBudget")) == 3

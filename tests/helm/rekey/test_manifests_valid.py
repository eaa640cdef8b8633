"""Every manifest of every scenario is a valid Kubernetes object (or a valid custom resource)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from .kube_schemas import CUSTOM_RESOURCE_SCHEMAS, KUBE_VERSIONS, validation_errors
from .rendering import CI_SCENARIOS, render, render_ci

SCENARIOS = [None, *CI_SCENARIOS]


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_rendered_object_is_valid(scenario: str | None, version: str) -> None:
    manifests = render_ci(scenario) if scenario else render()

    errors = [error for obj in manifests.all() for error in validation_errors(obj, version)]

    assert manifests.all(), "nothing rendered"
    assert errors == []


def test_scenarios_together_render_every_kind_the_chart_knows() -> None:
    kinds = {obj["kind"] for scenario in CI_SCENARIOS for obj in render_ci(scenario).all()}

    assert kinds >= {
        "ConfigMap",
        "Deployment",
        "StatefulSet",
        "Service",
        "ServiceAccount",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "Job",
        "Role",
        "RoleBinding",
    }
    assert kinds >= {kind for _, kind in CUSTOM_RESOURCE_SCHEMAS}


def _first(scenario: str, kind: str) -> dict[str, Any]:
    return copy.deepcopy(render_ci(scenario).all(kind)[0])


@pytest.mark.parametrize(
    ("scenario", "kind", "path", "bad_value"),
    [
        ("minimal-values", "Deployment", ("spec", "replicas"), "two"),
        ("minimal-values", "Deployment", ("spec", "template", "spec", "containerz"), []),
        ("keda-values", "ScaledObject", ("spec", "triggers", 0, "metadata", "lagThreshold"), 5000),
        ("keda-values", "TriggerAuthentication", ("spec", "secretTargetRef", 0, "value"), "plain"),
        ("production-tls-values", "ServiceMonitor", ("spec", "endpoints", 0, "interval"), "15 seconds"),
        ("backfill-spark-operator-values", "SparkApplication", ("spec", "mode"), "local"),
        ("backfill-spark-operator-values", "SparkApplication", ("spec", "driver", "env", 0, "valu"), "x"),
        ("backfill-values", "ConfigMap", ("metadata", "name"), "Not_A_Name"),
    ],
)
def test_validation_catches_a_broken_object(
    scenario: str, kind: str, path: tuple[str | int, ...], bad_value: object
) -> None:
    """Guards the guard: a validator that accepted anything would make the test above meaningless."""
    obj = _first(scenario, kind)
    node: Any = obj
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = bad_value

    assert validation_errors(obj, KUBE_VERSIONS[0]) != []


def test_validation_catches_a_mount_without_volume() -> None:
    deployment = _first("minimal-values", "Deployment")
    deployment["spec"]["template"]["spec"]["volumes"].pop()

    assert any("names no volume" in error for error in validation_errors(deployment, KUBE_VERSIONS[0]))


def test_validation_refuses_an_unknown_kind() -> None:
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}

    assert validation_errors(unknown, KUBE_VERSIONS[0]) != []

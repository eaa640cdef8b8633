"""Render the rekey chart offline with Helm's own engine and query the manifests.

The chart is rendered by helm-python-sdk, which binds Helm v4's Go SDK (a native library shipped
inside the wheel), so no helm binary, cluster or network is involved. Rendering goes through the
same path as `helm template`: values are coalesced with values.yaml, validated against
values.schema.json, then every template is executed.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
CHART_DIR = REPO_ROOT / "helm" / "rekey"
CI_DIR = CHART_DIR / "ci"
RELEASE = "demo"
NAMESPACE = "rekey"
SERVICES = ("acl", "projection", "sink", "reconciler")
SINK_SERVICES = ("sink", "reconciler")
CI_SCENARIOS = tuple(sorted(path.stem for path in CI_DIR.glob("*.yaml")))
# libyaml's loader when PyYAML was built with it: parsing dominates a render otherwise.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def chart() -> helm.Chart:
    """The chart, loaded once per test session (a read-only native handle)."""
    return helm.Chart.load(CHART_DIR)


@functools.cache
def default_values() -> dict[str, Any]:
    """values.yaml as Helm parses it."""
    return chart().values


def ci_values(scenario: str) -> dict[str, Any]:
    """The values of one ci/<scenario>.yaml file."""
    loaded = yaml.safe_load((CI_DIR / f"{scenario}.yaml").read_text())
    return loaded or {}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge two values trees (override wins), like repeated `-f` files."""
    result = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


@dataclass(frozen=True)
class Manifests:
    """The rendered release: parsed objects plus the rendered NOTES.txt."""

    objects: tuple[dict[str, Any], ...]
    notes: str
    sources: dict[str, str]

    def all(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if kind is None or obj["kind"] == kind]

    def names(self, kind: str) -> list[str]:
        return [obj["metadata"]["name"] for obj in self.all(kind)]

    def get(self, kind: str, name: str) -> dict[str, Any]:
        matches = [obj for obj in self.all(kind) if obj["metadata"]["name"] == name]
        assert len(matches) == 1, f"expected one {kind} named {name}, found {self.names(kind)}"
        return matches[0]

    def find(self, kind: str, name: str) -> dict[str, Any] | None:
        matches = [obj for obj in self.all(kind) if obj["metadata"]["name"] == name]
        return matches[0] if matches else None


def render(values: dict[str, Any] | None = None) -> Manifests:
    """Render the chart with `values` layered over values.yaml (as `helm template -f`)."""
    sources = chart().render(values, name=RELEASE, namespace=NAMESPACE)
    objects: list[dict[str, Any]] = []
    notes = ""
    for path, text in sorted(sources.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        for document in yaml.load_all(text, Loader=_YAML_LOADER):
            if document:
                objects.append(document)
    return Manifests(objects=tuple(objects), notes=notes, sources=sources)


def render_error(values: dict[str, Any] | None) -> str:
    """Render expecting Helm to refuse; returns Helm's error message."""
    try:
        chart().render(values, name=RELEASE, namespace=NAMESPACE)
    except helm.HelmError as exc:
        return str(exc)
    raise AssertionError(f"rendering succeeded, expected a failure for values {values!r}")


def full_name(component: str) -> str:
    """Name of a component's resources for the test release."""
    return f"{RELEASE}-rekey-{component}"


WORKLOAD_KINDS = ("Deployment", "StatefulSet")
"""The kinds a service renders as: a StatefulSet with `persistence.enabled`."""


def workload(manifests: Manifests, component: str) -> dict[str, Any]:
    """A service's Deployment or StatefulSet (exactly one of them)."""
    matches = [obj for kind in WORKLOAD_KINDS for obj in manifests.all(kind)
               if obj["metadata"]["name"] == full_name(component)]
    assert len(matches) == 1, f"expected one workload named {full_name(component)}, found {len(matches)}"
    return matches[0]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """A workload's pod spec as its controller creates the pods: a StatefulSet adds a volume per claim template
    (a PersistentVolumeClaim named `<template>-<pod>`)."""
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    claims = obj["spec"].get("volumeClaimTemplates", [])
    if not claims:
        return spec
    pod = f"{obj['metadata']['name']}-0"
    volumes = [*spec.get("volumes", []),
               *({"name": c["metadata"]["name"],
                  "persistentVolumeClaim": {"claimName": f"{c['metadata']['name']}-{pod}"}} for c in claims)]
    return {**spec, "volumes": volumes}


def pod_specs(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Pod specs carried by a workload object, labelled for messages."""
    kind = obj["kind"]
    name = obj["metadata"]["name"]
    if kind in ("Deployment", "StatefulSet", "Job"):
        yield f"{kind}/{name}", pod_spec(obj)
    elif kind == "ConfigMap" and "executor-pod-template.yaml" in obj.get("data", {}):
        pod = yaml.safe_load(obj["data"]["executor-pod-template.yaml"])
        yield f"{kind}/{name}:executor-pod-template", pod["spec"]


def containers(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every container of a workload object (including SparkApplication driver/executor)."""
    for label, spec in pod_specs(obj):
        for container in spec.get("containers", []):
            yield f"{label}/{container['name']}", container
    if obj["kind"] == "SparkApplication":
        for role in ("driver", "executor"):
            yield f"SparkApplication/{obj['metadata']['name']}/{role}", obj["spec"][role]


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A container's env as name -> EnvVar."""
    return {entry["name"]: entry for entry in container.get("env", [])}


def secret_ref(env: dict[str, dict[str, Any]], name: str) -> tuple[str, str]:
    """(secret name, key) an env var reads from; fails when it is not a secretKeyRef."""
    entry = env[name]
    assert "value" not in entry, f"{name} carries a plaintext value"
    ref = entry["valueFrom"]["secretKeyRef"]
    return ref["name"], ref["key"]


@functools.cache
def render_ci(scenario: str) -> Manifests:
    """A ci scenario rendered once per session (treat the result as read-only)."""
    return render(ci_values(scenario))

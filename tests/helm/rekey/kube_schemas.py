"""Validate rendered manifests: Kubernetes kinds against the upstream OpenAPI schemas
(kubernetes-validate, strict mode: unknown fields are errors), the custom resources the chart
renders against structural schemas written from their CRDs, plus the API-server checks that a
schema cannot express (selectors matching pod labels, mounts naming declared volumes).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema
import kubernetes_validate

from .rendering import containers, pod_specs

# kubernetes-validate re-reads and re-parses its JSON schema files (megabytes of definitions) on every
# call; memoising the reader keeps the whole suite fast. The parsed schemas are only ever read.
kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)

# Kubernetes versions the manifests are checked against: the chart's documented baseline and
# the newest version kubernetes-validate ships.
KUBE_VERSIONS = ("1.33.0", kubernetes_validate.utils.latest_version())

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
_DNS_1035_LABEL = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?"
# Kinds whose names become DNS labels (Service names, pod hostnames of Deployments, StatefulSets and Jobs).
_DNS_LABEL_NAMED_KINDS = {"Service", "Deployment", "StatefulSet", "Job"}
# A StatefulSet's pods carry `controller-revision-hash: <name>-<hash>`, a label value: the hash leaves the name 52.
_STATEFUL_SET_NAME_MAX = 63 - 11
_INT32 = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
_DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}


def _strict(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _resource(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return _strict(
        {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": {"type": "object"},
            "spec": spec,
        },
        ["apiVersion", "kind", "metadata", "spec"],
    )


# keda.sh/v1alpha1 ScaledObject (KEDA 2.x CRD, spec fields the chart may use).
SCALED_OBJECT = _resource(
    "keda.sh/v1alpha1",
    "ScaledObject",
    _strict(
        {
            "scaleTargetRef": _strict(
                {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "name": {"type": "string", "minLength": 1},
                    "envSourceContainerName": {"type": "string"},
                },
                ["name"],
            ),
            "pollingInterval": _INT32,
            "cooldownPeriod": _INT32,
            "initialCooldownPeriod": _INT32,
            "idleReplicaCount": _INT32,
            "minReplicaCount": _INT32,
            "maxReplicaCount": _INT32,
            "advanced": {"type": "object"},
            "fallback": {"type": "object"},
            "triggers": {
                "type": "array",
                "minItems": 1,
                "items": _strict(
                    {
                        "type": {"type": "string", "minLength": 1},
                        "name": {"type": "string"},
                        "metadata": _STRING_MAP,
                        "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                        "useCachedMetrics": {"type": "boolean"},
                        "authenticationRef": _strict(
                            {
                                "name": {"type": "string", "minLength": 1},
                                "kind": {"enum": ["TriggerAuthentication", "ClusterTriggerAuthentication"]},
                            },
                            ["name"],
                        ),
                    },
                    ["type", "metadata"],
                ),
            },
        },
        ["scaleTargetRef", "triggers"],
    ),
)

# keda.sh/v1alpha1 TriggerAuthentication (secret references only).
TRIGGER_AUTHENTICATION = _resource(
    "keda.sh/v1alpha1",
    "TriggerAuthentication",
    _strict(
        {
            "secretTargetRef": {
                "type": "array",
                "minItems": 1,
                "items": _strict(
                    {
                        "parameter": {"type": "string", "minLength": 1},
                        "name": {"type": "string", "minLength": 1},
                        "key": {"type": "string", "minLength": 1},
                    },
                    ["parameter", "name", "key"],
                ),
            }
        },
        ["secretTargetRef"],
    ),
)

_LABEL_SELECTOR = _strict({"matchLabels": _STRING_MAP, "matchExpressions": {"type": "array"}})

# monitoring.coreos.com/v1 ServiceMonitor (Prometheus Operator CRD, fields the chart may use).
SERVICE_MONITOR = _resource(
    "monitoring.coreos.com/v1",
    "ServiceMonitor",
    _strict(
        {
            "jobLabel": {"type": "string"},
            "targetLabels": {"type": "array", "items": {"type": "string"}},
            "podTargetLabels": {"type": "array", "items": {"type": "string"}},
            "selector": _LABEL_SELECTOR,
            "namespaceSelector": _strict(
                {"any": {"type": "boolean"}, "matchNames": {"type": "array", "items": {"type": "string"}}}
            ),
            "endpoints": {
                "type": "array",
                "minItems": 1,
                "items": _strict(
                    {
                        "port": {"type": "string"},
                        "targetPort": {"type": ["string", "integer"]},
                        "path": {"type": "string", "pattern": "^/"},
                        "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
                        "interval": _DURATION,
                        "scrapeTimeout": _DURATION,
                        "honorLabels": {"type": "boolean"},
                        "honorTimestamps": {"type": "boolean"},
                        "relabelings": {"type": "array", "items": {"type": "object"}},
                        "metricRelabelings": {"type": "array", "items": {"type": "object"}},
                    }
                ),
            },
        },
        ["selector", "endpoints"],
    ),
)

_SPARK_POD = {
    "cores": {"type": "integer", "minimum": 1},
    "coreLimit": {"type": "string"},
    "memory": {"type": "string", "pattern": r"^[0-9]+[kmgtKMGT]?$"},
    "memoryOverhead": {"type": "string"},
    "image": {"type": "string"},
    "serviceAccount": {"type": "string"},
    "labels": _STRING_MAP,
    "annotations": _STRING_MAP,
    "env": {"type": "array"},
    "volumeMounts": {"type": "array"},
    "podSecurityContext": {"type": "object"},
    "securityContext": {"type": "object"},
    "nodeSelector": _STRING_MAP,
    "tolerations": {"type": "array"},
    "affinity": {"type": "object"},
}

# sparkoperator.k8s.io/v1beta2 SparkApplication (Kubeflow Spark Operator CRD).
SPARK_APPLICATION = _resource(
    "sparkoperator.k8s.io/v1beta2",
    "SparkApplication",
    _strict(
        {
            "type": {"enum": ["Java", "Python", "Scala", "R"]},
            "pythonVersion": {"enum": ["2", "3"]},
            "mode": {"enum": ["cluster", "client"]},
            "sparkVersion": {"type": "string", "minLength": 1},
            "image": {"type": "string", "minLength": 1},
            "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
            "imagePullSecrets": {"type": "array", "items": {"type": "string"}},
            "mainApplicationFile": {"type": "string", "pattern": r"^(local|https?|s3a?|gs)://.+\.py$"},
            "arguments": {"type": "array", "items": {"type": "string"}},
            "sparkConf": _STRING_MAP,
            "restartPolicy": _strict({"type": {"enum": ["Never", "Always", "OnFailure"]}}),
            "timeToLiveSeconds": {"type": "integer", "minimum": 1},
            "volumes": {"type": "array"},
            "driver": _strict(_SPARK_POD, ["cores", "memory", "serviceAccount"]),
            "executor": _strict({**_SPARK_POD, "instances": {"type": "integer", "minimum": 1}}, ["instances"]),
        },
        ["type", "sparkVersion", "mainApplicationFile", "driver", "executor"],
    ),
)

CUSTOM_RESOURCE_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("keda.sh/v1alpha1", "ScaledObject"): SCALED_OBJECT,
    ("keda.sh/v1alpha1", "TriggerAuthentication"): TRIGGER_AUTHENTICATION,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"): SPARK_APPLICATION,
}


def _kube_validate(obj: dict[str, Any], version: str, label: str) -> list[str]:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.utils.ValidationError as exc:
        where = "/".join(str(part) for part in exc.path)
        return [f"{label}: {where}: {exc.message}"]
    return []


def _as_pod(spec: dict[str, Any], role: str) -> dict[str, Any]:
    """A SparkApplication driver/executor as the Pod the operator will create, for schema checks."""
    container = {"name": role, "image": "spark"}
    for field in ("env", "volumeMounts", "securityContext"):
        if field in spec:
            container[field] = spec[field]
    pod_spec: dict[str, Any] = {"containers": [container]}
    for field, target in (
        ("podSecurityContext", "securityContext"),
        ("nodeSelector", "nodeSelector"),
        ("tolerations", "tolerations"),
        ("affinity", "affinity"),
    ):
        if field in spec:
            pod_spec[target] = spec[field]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": role}, "spec": pod_spec}


def _pod_spec_errors(where: str, spec: dict[str, Any]) -> list[str]:
    """Volumes are unique and every mount names one of them."""
    errors: list[str] = []
    volumes = [volume["name"] for volume in spec.get("volumes", [])]
    if len(volumes) != len(set(volumes)):
        errors.append(f"{where}: duplicate volume names {volumes}")
    for container in spec.get("containers", []):
        for mount in container.get("volumeMounts", []):
            if mount["name"] not in volumes:
                errors.append(f"{where}: mount {mount['name']} names no volume of {volumes}")
    return errors


def _semantic_errors(obj: dict[str, Any]) -> list[str]:
    """Checks the API server (not the OpenAPI schema) would make."""
    errors: list[str] = []
    label = f"{obj['kind']}/{obj['metadata']['name']}"
    name = obj["metadata"]["name"]
    if len(name) > 253 or not re.fullmatch(_DNS_SUBDOMAIN, name):
        errors.append(f"{label}: name is not a DNS-1123 subdomain")
    if obj["kind"] in _DNS_LABEL_NAMED_KINDS and not re.fullmatch(_DNS_1035_LABEL, name):
        errors.append(f"{label}: name is not a DNS-1035 label of at most 63 characters")
    for key, value in obj["metadata"].get("labels", {}).items():
        if not re.fullmatch(_LABEL_VALUE, str(value)):
            errors.append(f"{label}: label {key}={value!r} is not a valid label value")
    if obj["kind"] in ("Deployment", "StatefulSet"):
        selector = obj["spec"]["selector"]["matchLabels"]
        pod_labels = obj["spec"]["template"]["metadata"]["labels"]
        if not selector.items() <= pod_labels.items():
            errors.append(f"{label}: selector {selector} does not match the pod labels {pod_labels}")
    if obj["kind"] == "StatefulSet" and len(name) > _STATEFUL_SET_NAME_MAX:
        errors.append(f"{label}: name longer than {_STATEFUL_SET_NAME_MAX}: its pods' controller-revision-hash "
                      "label would be invalid")
    for where, spec in pod_specs(obj):
        errors += _pod_spec_errors(where, spec)
    for where, container in containers(obj):
        names = [entry["name"] for entry in container.get("env", [])]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            errors.append(f"{where}: duplicate env vars {duplicates}")
    return errors


def validation_errors(obj: dict[str, Any], version: str) -> list[str]:
    """Every problem found in one rendered object; empty when it is valid."""
    label = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
    key = (obj.get("apiVersion"), obj.get("kind"))
    errors: list[str] = []
    if key in CUSTOM_RESOURCE_SCHEMAS:
        validator = jsonschema.Draft7Validator(CUSTOM_RESOURCE_SCHEMAS[key])
        errors += [
            f"{label}: {'/'.join(str(p) for p in error.path)}: {error.message}" for error in validator.iter_errors(obj)
        ]
        # ObjectMeta of a custom resource is the core ObjectMeta: check it through a ConfigMap.
        errors += _kube_validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj["metadata"]}, version, label)
        if obj["kind"] == "SparkApplication":
            volumes = obj["spec"].get("volumes", [])
            for role in ("driver", "executor"):
                pod = _as_pod(obj["spec"][role], role)
                pod["spec"]["volumes"] = volumes
                errors += _kube_validate(pod, version, f"{label}/{role}")
                errors += _pod_spec_errors(f"{label}/{role}", pod["spec"])
    else:
        try:
            errors += _kube_validate(obj, version, label)
        except kubernetes_validate.utils.SchemaNotFoundError as exc:
            errors.append(f"{label}: {exc.message} (and no structural schema in this module)")
    if obj.get("kind") == "ConfigMap" and "executor-pod-template.yaml" in obj.get("data", {}):
        for _, spec in pod_specs(obj):
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "executor"}, "spec": spec}
            errors += _kube_validate(pod, version, f"{label}:executor-pod-template")
    errors += _semantic_errors(obj)
    return errors

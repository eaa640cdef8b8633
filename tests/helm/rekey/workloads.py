"""A rendered Deployment's, StatefulSet's or Job's container as a local process: its command, arguments and
environment as the chart rendered them, with only what belongs to the cluster substituted.

Substituted: the Kafka connection (every `REKEY_KAFKA_*`) and the registry (`REKEY_REGISTRY_*`) by the test's
stack; Secret-backed variables by the test's values (one that is not provided fails the test, so a new Secret
gets a decision); mounted volumes, a StatefulSet's volume claims among them, by local directories (a ConfigMap's
files are written there); the Pod's own fields (`POD_IP`, `POD_NAME`; a StatefulSet's pod is its first,
`<name>-0`); a Spark driver's Kubernetes master by a local one; the HTTP port the readiness probe targets by a free
local port. Kubernetes' `$(VAR)` expansion is applied to arguments, as the kubelet does.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_rekey_dev.embedded.spark import job_environment
from tests.helm.rekey.rendering import Manifests, env_of, pod_spec

_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
POD_FIELDS = {"metadata.name": "rekey-test-pod", "metadata.namespace": "rekey", "status.podIP": "127.0.0.1"}


@dataclass(frozen=True)
class Stack:
    """The local stand-ins for what the chart points at."""

    kafka: dict[str, str]
    registry_url: str
    secrets: dict[str, str]
    """Values of Secret-backed variables, by variable name."""
    spark_master: str = "local[1]"
    """Instead of the Kubernetes API a Spark driver's `--master` names."""


@dataclass(frozen=True)
class LocalWorkload:
    label: str
    argv: list[str]
    env: dict[str, str]
    ready_url: str | None
    grace_seconds: float


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _volume_dirs(manifests: Manifests, pod: dict[str, Any], container: dict[str, Any], root: Path) -> dict[str, Path]:
    """mountPath -> local directory, ConfigMap volumes filled with their (selected) keys."""
    volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
    mounted: dict[str, Path] = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        local = root / mount["name"]
        local.mkdir(parents=True, exist_ok=True)
        if "configMap" in volume:
            data = manifests.get("ConfigMap", volume["configMap"]["name"])["data"]
            items = volume["configMap"].get("items") or [{"key": key, "path": key} for key in data]
            for item in items:
                (local / item["path"]).write_text(data[item["key"]])
        mounted[mount["mountPath"]] = local
    return mounted


def _relocate(value: str, mounted: dict[str, Path]) -> str:
    """`value` with a path under a mount moved to the mount's local directory (also inside `name=/path`)."""
    for mount_path in sorted(mounted, key=len, reverse=True):
        pattern = re.compile(rf"(^|=){re.escape(mount_path.rstrip('/'))}(?=/|$)")
        if pattern.search(value):
            return pattern.sub(r"\g<1>" + str(mounted[mount_path]).replace("\\", "\\\\"), value)
    return value


def pod_fields(obj: dict[str, Any]) -> dict[str, str]:
    """The downward API's fields of the (first) pod `obj` creates: a StatefulSet's pods are named `<name>-<ordinal>`."""
    if obj["kind"] == "StatefulSet":
        return POD_FIELDS | {"metadata.name": f"{obj['metadata']['name']}-0"}
    return POD_FIELDS


def _env_value(name: str, entry: dict[str, Any], stack: Stack, fields: dict[str, str]) -> str | None:
    if name.startswith(("REKEY_KAFKA_", "REKEY_REGISTRY_")):
        return None  # the connection is the stack's
    if "value" in entry:
        return str(entry["value"])
    source = entry["valueFrom"]
    if "fieldRef" in source:
        return fields[source["fieldRef"]["fieldPath"]]
    if "secretKeyRef" in source:
        assert name in stack.secrets, f"{name} reads Secret {source['secretKeyRef']}: the test provides no value"
        return stack.secrets[name]
    raise AssertionError(f"{name}: unsupported valueFrom {source}")


def local_workload(manifests: Manifests, obj: dict[str, Any], container: dict[str, Any], stack: Stack,
                   root: Path) -> LocalWorkload:
    pod = pod_spec(obj)
    label = f"{obj['kind']}/{obj['metadata']['name']}/{container['name']}"
    mounted = _volume_dirs(manifests, pod, container, root / "volumes")
    env = {name: value for name, value in os.environ.items() if not name.startswith("REKEY_")}
    env |= job_environment()
    for name, entry in env_of(container).items():
        value = _env_value(name, entry, stack, pod_fields(obj))
        if value is not None:
            env[name] = _relocate(value, mounted)
    env |= {f"REKEY_KAFKA_{name.upper()}": value for name, value in stack.kafka.items()}
    env["REKEY_REGISTRY_URL"] = stack.registry_url
    ready_url = None
    probe = container.get("readinessProbe", {}).get("httpGet")
    if probe:
        ports = {port["name"]: port["containerPort"] for port in container.get("ports", [])}
        target = ports.get(probe["port"], probe["port"])
        assert "REKEY_WEB_PORT" not in env, f"{label}: the probe port is the code's default web port"
        from kafka_rekey.services.settings import ServiceSettings

        assert target == ServiceSettings.model_fields["web_port"].default, \
            f"{label}: the readiness probe targets {target}, the service listens on its default web port"
        local_port = _free_port()
        env["REKEY_WEB_PORT"] = str(local_port)
        ready_url = f"http://127.0.0.1:{local_port}{probe['path']}"
    command = [*container.get("command", []), *container.get("args", [])]
    assert command[:1] == ["rekey"], f"{label}: runs {command[:1]}, not the rekey console script"
    argv = [str(Path(sys.executable).with_name("rekey"))]
    argv += [_relocate(_REFERENCE.sub(lambda m: env.get(m.group(1), m.group(0)), arg), mounted) for arg in command[1:]]
    if "--master" in argv:
        argv[argv.index("--master") + 1] = stack.spark_master
    return LocalWorkload(label, argv, env, ready_url, float(pod.get("terminationGracePeriodSeconds", 30)))

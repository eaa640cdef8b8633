"""templates/statefulset.yaml: a stateful service with `persistence.enabled` runs as a StatefulSet with a volume claim
per pod for /var/lib/rekey and its pod's name as worker id; everything that targets or selects it follows."""

from __future__ import annotations

from typing import Any

import pytest

from ..rendering import (
    RELEASE,
    SERVICES,
    env_of,
    full_name,
    pod_spec,
    render,
    render_ci,
    render_error,
    workload,
)

PERSISTENT_ACL = {"services": {"acl": {"persistence": {"enabled": True}}}}


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    (container,) = obj["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _data_volume(obj: dict[str, Any]) -> dict[str, Any]:
    mount = next(m for m in _container(obj)["volumeMounts"] if m["mountPath"] == "/var/lib/rekey")
    return next(v for v in pod_spec(obj)["volumes"] if v["name"] == mount["name"])


def test_every_service_is_a_deployment_on_an_empty_dir_by_default() -> None:
    manifests = render()

    assert manifests.all("StatefulSet") == []
    assert not [name for name in manifests.names("Service") if name.endswith("-headless")]
    for service in SERVICES:
        obj = workload(manifests, service)
        assert obj["kind"] == "Deployment"
        assert "emptyDir" in _data_volume(obj)
        assert "REKEY_WORKER_ID" not in env_of(_container(obj))


def test_the_acl_scenario_is_a_statefulset_with_a_claim_per_pod() -> None:
    manifests = render_ci("statefulset-values")

    acl = manifests.get("StatefulSet", full_name("acl"))
    assert manifests.find("Deployment", full_name("acl")) is None
    spec = acl["spec"]
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["updateStrategy"] == {"type": "RollingUpdate"}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Delete", "whenScaled": "Retain"}
    assert "replicas" not in spec  # KEDA owns it
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data"
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast-ssd",
                             "resources": {"requests": {"storage": "20Gi"}}}
    assert claim["metadata"]["labels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert "data" not in [v["name"] for v in spec["template"]["spec"]["volumes"]]  # the claim is the data volume
    assert _data_volume(acl)["persistentVolumeClaim"] == {"claimName": f"data-{full_name('acl')}-0"}
    assert workload(manifests, "projection")["kind"] == "Deployment"


def test_the_pods_name_is_the_worker_id() -> None:
    manifests = render_ci("statefulset-values")

    env = env_of(_container(manifests.get("StatefulSet", full_name("acl"))))
    assert env["REKEY_WORKER_ID"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["REKEY_DATA_DIR"]["value"] == "/var/lib/rekey"
    assert env["REKEY_PROCESSING_GUARANTEE"]["value"] == "exactly_once"
    assert "REKEY_WORKER_ID" not in env_of(_container(workload(manifests, "projection")))


def test_a_headless_service_governs_the_statefulset_and_no_service_monitor_selects_it() -> None:
    manifests = render_ci("statefulset-values")
    acl = manifests.get("StatefulSet", full_name("acl"))
    pod_labels = acl["spec"]["template"]["metadata"]["labels"]

    headless = manifests.get("Service", acl["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert headless["spec"]["selector"].items() <= pod_labels.items()
    assert manifests.get("Service", full_name("acl"))["spec"]["selector"] == headless["spec"]["selector"]
    monitored = render({**PERSISTENT_ACL, "metrics": {"serviceMonitor": {"enabled": True}}})
    selector = monitored.get("ServiceMonitor", full_name("acl"))["spec"]["selector"]["matchLabels"]
    selected = [s["metadata"]["name"] for s in monitored.all("Service")
                if selector.items() <= s["metadata"]["labels"].items()]
    assert selected == [full_name("acl")]


def test_autoscalers_and_the_pdb_target_the_statefulset() -> None:
    keda = render_ci("statefulset-values")
    hpa = render({"services": {"acl": {"persistence": {"enabled": True}, "hpa": {"enabled": True}}}})
    target = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": full_name("acl")}

    assert keda.get("ScaledObject", full_name("acl"))["spec"]["scaleTargetRef"] == target
    assert hpa.get("HorizontalPodAutoscaler", full_name("acl"))["spec"]["scaleTargetRef"] == target
    pdb = keda.get("PodDisruptionBudget", full_name("acl"))["spec"]
    assert pdb["maxUnavailable"] == 1
    pod_labels = keda.get("StatefulSet", full_name("acl"))["spec"]["template"]["metadata"]["labels"]
    assert pdb["selector"]["matchLabels"].items() <= pod_labels.items()


@pytest.mark.parametrize(("storage_class", "rendered"), [("", None), ("-", ""), ("gp3", "gp3")])
def test_storage_class_empty_is_the_default_class_and_dash_is_none(storage_class: str, rendered: str | None) -> None:
    values = {"services": {"projection": {"persistence": {"enabled": True, "storageClassName": storage_class}}}}

    (claim,) = render(values).get("StatefulSet", full_name("projection"))["spec"]["volumeClaimTemplates"]

    assert claim["spec"].get("storageClassName") == rendered


def test_retention_access_modes_and_claim_annotations_are_values() -> None:
    persistence = {"enabled": True, "size": "50Gi", "accessModes": ["ReadWriteOncePod"],
                   "annotations": {"backup.velero.io/skip": "true"},
                   "retentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}}

    acl = render({"services": {"acl": {"persistence": persistence, "replicas": 3}}}).get("StatefulSet",
                                                                                          full_name("acl"))

    (claim,) = acl["spec"]["volumeClaimTemplates"]
    assert acl["spec"]["replicas"] == 3
    assert acl["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Delete"}
    assert claim["spec"]["accessModes"] == ["ReadWriteOncePod"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "50Gi"
    assert claim["metadata"]["annotations"] == {"backup.velero.io/skip": "true"}


def test_one_acl_stage_can_persist_while_the_other_stays_a_deployment() -> None:
    values = {"services": {"acl": {"stages": {"split": True, "sequence": {"persistence": {"enabled": True}}}}}}

    manifests = render(values)

    sequence = manifests.get("StatefulSet", full_name("acl-sequence"))
    assert env_of(_container(sequence))["REKEY_WORKER_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert manifests.get("Service", sequence["spec"]["serviceName"])["spec"]["clusterIP"] == "None"
    assert workload(manifests, "acl-translate")["kind"] == "Deployment"


def test_a_long_release_name_keeps_the_component_and_room_for_the_revision_hash() -> None:
    values = {**PERSISTENT_ACL, "fullnameOverride": "a-release-name-that-goes-on-and-on-for-quite-a-while-x"}

    (statefulset,) = render(values).all("StatefulSet")

    name = statefulset["metadata"]["name"]
    assert len(name) <= 52 and name.endswith("-acl"), name


@pytest.mark.parametrize("service", ["sink", "reconciler"])
def test_persistence_is_refused_for_services_without_local_state(service: str) -> None:
    message = render_error({"services": {service: {"persistence": {"enabled": True}}}})

    assert f"services.{service}.persistence.enabled is true: the {service} keeps no local state" in message


@pytest.mark.parametrize(
    ("persistence", "field"),
    [
        ({"size": "lots"}, "/services/acl/persistence/size"),
        ({"retentionPolicy": {"whenScaled": "Keep"}}, "/services/acl/persistence/retentionPolicy/whenScaled"),
        ({"accessModes": []}, "/services/acl/persistence/accessModes"),
    ],
)
def test_the_schema_refuses_bad_persistence_values(persistence: dict[str, Any], field: str) -> None:
    assert field in render_error({"services": {"acl": {"persistence": persistence}}})


def test_notes_say_the_kind_and_where_the_state_lives() -> None:
    notes = render_ci("statefulset-values").notes

    assert f"acl: StatefulSet {RELEASE}-rekey-acl, KEDA 1..6 replicas on consumer lag" in notes
    assert "State on a 20Gi PersistentVolumeClaim per pod (data-<pod>), worker id = pod name" in notes
    assert "projection: Deployment" in notes

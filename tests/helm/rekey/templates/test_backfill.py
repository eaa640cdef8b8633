"""templates/backfill-*.yaml: the optional Spark backfill (Job in client mode, or a SparkApplication)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from ..rendering import Manifests, env_of, full_name, render, render_ci, render_error

BACKFILL = {
    "backfill": {
        "enabled": True,
        "source": "crm.public.interactions",
        "target": "interaction_events_low_v2",
        "manifestTopic": "backfill_handoff_checkpoints_v1",
    }
}


def _jobs(manifests: Manifests) -> list[dict[str, Any]]:
    return [job for job in manifests.all("Job") if job["metadata"]["name"].startswith(full_name("backfill-"))]


def _conf(args: list[str]) -> dict[str, str]:
    pairs = [args[i + 1] for i, arg in enumerate(args) if arg == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_nothing_is_rendered_by_default() -> None:
    manifests = render()

    assert _jobs(manifests) == []
    assert manifests.all("SparkApplication") == []
    assert manifests.all("Role") == []
    assert manifests.find("ServiceAccount", full_name("backfill")) is None


def test_job_runs_rekey_backfill_against_kubernetes() -> None:
    (job,) = _jobs(render_ci("backfill-values"))
    (container,) = job["spec"]["template"]["spec"]["containers"]
    args = container["args"]

    assert container["command"] == ["rekey"]
    assert args[:9] == [
        "backfill",
        "--source", "crm.public.interactions",
        "--target", "interaction_events_low_v2",
        "--manifest-topic", "backfill_handoff_checkpoints_v1",
        "--master", "k8s://https://kubernetes.default.svc",
    ]  # fmt: skip
    conf = _conf(args)
    assert conf["spark.submit.deployMode"] == "client"
    assert conf["spark.kubernetes.namespace"] == "rekey"
    assert conf["spark.kubernetes.container.image"] == container["image"] == "ghcr.io/rekey/rekey-backfill:0.1.0"
    assert conf["spark.executor.instances"] == "4"
    assert conf["spark.executor.memory"] == "4g"
    assert conf["spark.sql.shuffle.partitions"] == "48"
    # Executors reach the driver on the pod IP, which Kubernetes substitutes from the downward API.
    assert conf["spark.driver.host"] == "$(POD_IP)"
    assert env_of(container)["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 86400
    assert "ttlSecondsAfterFinished" not in job["spec"]


def test_driver_may_create_executor_pods() -> None:
    manifests = render_ci("backfill-values")
    (job,) = _jobs(manifests)
    pod = job["spec"]["template"]["spec"]

    account = manifests.get("ServiceAccount", pod["serviceAccountName"])
    binding = manifests.get("RoleBinding", full_name("backfill"))
    role = manifests.get("Role", binding["roleRef"]["name"])
    assert pod["automountServiceAccountToken"] is True
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "rekey"}
    ]
    pods_rule = next(rule for rule in role["rules"] if "pods" in rule["resources"])
    assert {"create", "delete", "watch", "list", "get"} <= set(pods_rule["verbs"])


def test_executors_get_the_same_security_context_from_a_pod_template() -> None:
    manifests = render_ci("backfill-values")
    (job,) = _jobs(manifests)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    path = _conf(container["args"])["spark.kubernetes.executor.podTemplateFile"]

    mount = next(m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/"))
    volume = next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    configmap = manifests.get("ConfigMap", volume["configMap"]["name"])
    template = yaml.safe_load(configmap["data"][path.rsplit("/", 1)[1]])
    (executor,) = template["spec"]["containers"]
    assert executor["name"] == _conf(container["args"])["spark.kubernetes.executor.podTemplateContainerName"]
    assert executor["securityContext"] == container["securityContext"]
    assert template["spec"]["securityContext"] == job["spec"]["template"]["spec"]["securityContext"]
    assert template["spec"]["automountServiceAccountToken"] is False


def test_spark_operator_renders_a_spark_application_instead_of_the_job() -> None:
    manifests = render_ci("backfill-spark-operator-values")

    (app,) = manifests.all("SparkApplication")
    spec = app["spec"]
    assert _jobs(manifests) == []
    assert (spec["type"], spec["mode"], spec["pythonVersion"]) == ("Python", "cluster", "3")
    assert spec["arguments"] == [
        "backfill",
        "--source", "crm.public.interactions",
        "--target", "interaction_events_low_v2",
        "--manifest-topic", "backfill_handoff_checkpoints_v1",
    ]  # fmt: skip
    assert spec["executor"]["instances"] == 3
    assert spec["timeToLiveSeconds"] == 86400
    assert spec["driver"]["serviceAccount"] == full_name("backfill")
    assert manifests.get("RoleBinding", full_name("backfill"))["subjects"][0]["name"] == full_name("backfill")
    for role in ("driver", "executor"):
        assert spec[role]["securityContext"]["readOnlyRootFilesystem"] is True
        env = env_of(spec[role])
        assert env["REKEY_KAFKA_SECURITY_PROTOCOL"]["value"] == "SSL"
        assert env["REKEY_KAFKA_SSL_CA_LOCATION"]["value"] == "/etc/rekey-tls/kafka/ca.crt"


def test_run_name_changes_with_the_parameters() -> None:
    first = _jobs(render(BACKFILL))[0]["metadata"]["name"]
    again = _jobs(render(BACKFILL))[0]["metadata"]["name"]
    other = _jobs(render({"backfill": {**BACKFILL["backfill"], "target": "interaction_events_high_v2"}}))[0]

    assert first == again
    assert other["metadata"]["name"] != first


@pytest.mark.parametrize("missing", ["source", "target", "manifestTopic"])
def test_missing_parameter_fails_rendering(missing: str) -> None:
    values = {"backfill": {**BACKFILL["backfill"], missing: ""}}

    assert f"backfill.enabled is true: set backfill.{missing}" in render_error(values)


def test_source_and_target_must_differ() -> None:
    values = {"backfill": {**BACKFILL["backfill"], "target": "crm.public.interactions"}}

    assert "a backfill must write to another topic" in render_error(values)


@pytest.mark.parametrize(("key", "kind"), [("source", "a source or topic"), ("target", "a topic"),
                                           ("manifestTopic", "a topic")])
def test_topics_missing_from_the_catalog_fail_rendering(key: str, kind: str) -> None:
    values = {"backfill": {**BACKFILL["backfill"], key: "interaction_events_low_v3"}}

    error = render_error(values)

    assert f'backfill.{key} "interaction_events_low_v3" is not {kind} of the catalog' in error
    assert "interaction_events_low_v2" in error


@pytest.mark.parametrize("operator", [False, True])
def test_spark_conf_numbers_are_rendered_plainly(operator: bool) -> None:
    conf = {"spark.sql.shuffle.partitions": 1000000, "spark.memory.fraction": 0.75, "spark.ui.enabled": False}
    values = {"backfill": {**BACKFILL["backfill"], "spark": {"conf": conf}, "sparkOperator": {"enabled": operator}}}

    manifests = render(values)

    if operator:
        rendered = manifests.all("SparkApplication")[0]["spec"]["sparkConf"]
    else:
        rendered = _conf(_jobs(manifests)[0]["spec"]["template"]["spec"]["containers"][0]["args"])
    assert rendered["spark.sql.shuffle.partitions"] == "1000000"
    assert rendered["spark.memory.fraction"] == "0.75"
    assert rendered["spark.ui.enabled"] == "false"

"""templates/job-topics.yaml: the topic provisioning Helm hook."""

from __future__ import annotations

from typing import Any

from ..rendering import Manifests, env_of, full_name, render, render_ci, secret_ref


def _job(manifests: Manifests) -> dict[str, Any]:
    return manifests.get("Job", full_name("topics"))


def test_runs_as_post_install_and_post_upgrade_hook() -> None:
    annotations = _job(render())["metadata"]["annotations"]

    assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    assert annotations["helm.sh/hook-weight"] == "0"


def test_applies_the_catalog_waiting_for_the_brokers() -> None:
    job = _job(render({"topicsJob": {"extraArgs": ["--replication-factor", "3"], "backoffLimit": 5}}))
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]

    assert [*container["command"], *container["args"]] == [
        "rekey", "topics", "apply", "--wait-for-brokers", "300", "--replication-factor", "3",
    ]  # fmt: skip
    assert job["spec"]["backoffLimit"] == 5
    assert job["spec"]["activeDeadlineSeconds"] == 1800
    assert pod["restartPolicy"] == "Never"
    assert env_of(container)["REKEY_CATALOG_PATH"]["value"] == "/etc/rekey/catalog.yaml"
    catalog = next(v for v in pod["volumes"] if v["name"] == "catalog")
    assert catalog["configMap"]["name"] == full_name("catalog")


def test_shares_the_services_security_context_and_secrets() -> None:
    manifests = render_ci("production-tls-values")
    pod = _job(manifests)["spec"]["template"]["spec"]
    service_pod = manifests.get("Deployment", full_name("acl"))["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = env_of(container)

    assert pod["securityContext"] == service_pod["securityContext"]
    assert container["securityContext"] == service_pod["containers"][0]["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert secret_ref(env, "REKEY_KAFKA_SASL_PASSWORD") == ("rekey-kafka-credentials", "password")
    assert "REKEY_KAFKA_SSL_CA_LOCATION" in env
    assert "REKEY_SINK_DATABASE_URL" not in env
    assert container["image"] == "registry.example.com/streaming/rekey:0.1.0"
    assert pod["imagePullSecrets"] == [{"name": "registry-example-com"}]


def test_hook_can_be_disabled() -> None:
    assert render({"topicsJob": {"enabled": False}}).find("Job", full_name("topics")) is None

"""templates/deployment.yaml: one Deployment per enabled service, honouring the service contract."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from ..rendering import (
    SERVICES,
    SINK_SERVICES,
    Manifests,
    default_values,
    env_of,
    full_name,
    render,
    render_ci,
    render_error,
    secret_ref,
)


def _deployment(manifests: Manifests, service: str) -> dict[str, Any]:
    return manifests.get("Deployment", full_name(service))


def _container(manifests: Manifests, service: str) -> dict[str, Any]:
    (container,) = _deployment(manifests, service)["spec"]["template"]["spec"]["containers"]
    return dict(container)


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_runs_its_own_command_on_port_6066(service: str) -> None:
    container = _container(render(), service)

    assert container["name"] == service
    assert [*container["command"], *container["args"]] == ["rekey", "run", service]
    assert container["ports"] == [{"name": "http", "containerPort": 6066, "protocol": "TCP"}]


def test_replicas_and_resources_are_set_per_service() -> None:
    sizes = {
        "acl": (3, "750m", "1536Mi"),
        "projection": (2, "300m", "1Gi"),
        "sink": (4, "200m", "640Mi"),
        "reconciler": (0, "50m", "128Mi"),
    }
    values = {
        "services": {
            name: {"replicas": replicas, "resources": {"requests": {"cpu": cpu}, "limits": {"memory": memory}}}
            for name, (replicas, cpu, memory) in sizes.items()
        }
    }

    manifests = render(values)

    for name, (replicas, cpu, memory) in sizes.items():
        assert _deployment(manifests, name)["spec"]["replicas"] == replicas
        resources = _container(manifests, name)["resources"]
        assert resources["requests"]["cpu"] == cpu
        assert resources["limits"]["memory"] == memory


def test_a_disabled_service_renders_nothing() -> None:
    manifests = render({"services": {"projection": {"enabled": False}}})

    leftovers = [obj["kind"] for obj in manifests.all() if obj["metadata"]["name"] == full_name("projection")]
    assert leftovers == []
    assert sorted(manifests.names("Deployment")) == sorted(full_name(s) for s in SERVICES if s != "projection")


@pytest.mark.parametrize("autoscaler", ["hpa", "keda"])
def test_autoscaled_deployments_leave_replicas_to_the_autoscaler(autoscaler: str) -> None:
    manifests = render({"services": {"acl": {autoscaler: {"enabled": True}}}})

    assert "replicas" not in _deployment(manifests, "acl")["spec"]
    assert _deployment(manifests, "projection")["spec"]["replicas"] == 2


@pytest.mark.parametrize("service", SERVICES)
def test_probes_hit_the_health_endpoints(service: str) -> None:
    container = _container(render(), service)

    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["livenessProbe"]["failureThreshold"] == default_values()["livenessProbe"]["failureThreshold"]


def test_the_health_limits_reach_the_runtime_services_only() -> None:
    manifests = render({"health": {"loopSeconds": 45, "restoreStallSeconds": 90}})

    for service in ("acl", "projection"):
        env = env_of(_container(manifests, service))
        assert (env["REKEY_LIVENESS_S"]["value"], env["REKEY_RESTORE_STALL_S"]["value"]) == ("45", "90")
    for service in ("sink", "reconciler"):
        assert "REKEY_LIVENESS_S" not in env_of(_container(manifests, service))


def test_probes_can_be_disabled() -> None:
    container = _container(render({"startupProbe": {"enabled": False}}), "acl")

    assert "startupProbe" not in container
    assert "livenessProbe" in container


@pytest.mark.parametrize("service", SERVICES)
def test_pods_run_non_root_with_a_read_only_root_filesystem(service: str) -> None:
    pod = _deployment(render(), service)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    security = container["securityContext"]

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["runAsNonRoot"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert pod["automountServiceAccountToken"] is False
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert "emptyDir" in volumes[mounts["/var/lib/rekey"]]


def test_data_dir_size_limit_is_per_service() -> None:
    pod = _deployment(render({"services": {"sink": {"dataDirSizeLimit": "3Gi"}}}), "sink")["spec"]["template"]["spec"]

    data = next(volume for volume in pod["volumes"] if volume["name"] == "data")
    assert data["emptyDir"] == {"sizeLimit": "3Gi"}


def test_termination_grace_outlasts_the_30s_shutdown() -> None:
    manifests = render({"services": {"sink": {"terminationGracePeriodSeconds": 90}}})

    for service in SERVICES:
        grace = _deployment(manifests, service)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace == (90 if service == "sink" else 45)
        assert grace > 30


@pytest.mark.parametrize("service", SERVICES)
def test_contract_environment(service: str) -> None:
    env = env_of(_container(render({"services": {service: {"logLevel": "DEBUG"}}}), service))

    assert env["REKEY_KAFKA_BOOTSTRAP_SERVERS"]["value"] == "kafka:9092"
    assert env["REKEY_KAFKA_SECURITY_PROTOCOL"]["value"] == "PLAINTEXT"
    assert env["REKEY_REGISTRY_URL"]["value"] == "http://schema-registry:8081"
    assert env["REKEY_CATALOG_PATH"]["value"] == "/etc/rekey/catalog.yaml"
    assert env["REKEY_PROCESSING_GUARANTEE"]["value"] == "at_least_once"
    assert env["REKEY_DATA_DIR"]["value"] == "/var/lib/rekey"
    assert env["REKEY_LOG_LEVEL"]["value"] == "DEBUG"
    # Nothing SASL/TLS-related on a PLAINTEXT cluster.
    assert not {name for name in env if "SASL" in name or "SSL_CA" in name}


def test_sink_dsn_only_for_the_services_that_use_the_database() -> None:
    manifests = render({"sinkDatabase": {"existingSecret": "pg", "dsnKey": "uri"}})

    for service in SERVICES:
        env = env_of(_container(manifests, service))
        if service in SINK_SERVICES:
            assert secret_ref(env, "REKEY_SINK_DATABASE_URL") == ("pg", "uri")
        else:
            assert "REKEY_SINK_DATABASE_URL" not in env


def test_sasl_ssl_credentials_and_ca_come_from_secrets() -> None:
    manifests = render_ci("production-tls-values")

    for service in SERVICES:
        container = _container(manifests, service)
        env = env_of(container)
        assert env["REKEY_KAFKA_SECURITY_PROTOCOL"]["value"] == "SASL_SSL"
        assert env["REKEY_KAFKA_SASL_MECHANISM"]["value"] == "SCRAM-SHA-512"
        assert secret_ref(env, "REKEY_KAFKA_SASL_USERNAME") == ("rekey-kafka-credentials", "username")
        assert secret_ref(env, "REKEY_KAFKA_SASL_PASSWORD") == ("rekey-kafka-credentials", "password")
        assert secret_ref(env, "REKEY_REGISTRY_USERNAME") == ("rekey-registry-credentials", "username")
        assert secret_ref(env, "REKEY_REGISTRY_PASSWORD") == ("rekey-registry-credentials", "password")
        # The CA file the env var names is the Secret's key, mounted read-only.
        ca_path = env["REKEY_KAFKA_SSL_CA_LOCATION"]["value"]
        mount = next(m for m in container["volumeMounts"] if ca_path.startswith(m["mountPath"] + "/"))
        assert mount["readOnly"] is True
        pod = _deployment(manifests, service)["spec"]["template"]["spec"]
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert volume["secret"]["secretName"] == "rekey-kafka-ca"
        assert volume["secret"]["items"] == [{"key": "ca.crt", "path": ca_path.rsplit("/", 1)[1]}]


def test_ssl_without_ca_secret_trusts_the_system_store() -> None:
    container = _container(render({"kafka": {"securityProtocol": "SSL"}}), "acl")

    assert "REKEY_KAFKA_SSL_CA_LOCATION" not in env_of(container)
    assert [m["name"] for m in container["volumeMounts"]] == ["tmp", "data", "catalog"]


def test_extra_env_is_appended_per_service() -> None:
    extra = [{"name": "REKEY_LOG_FORMAT", "value": "console"}]

    manifests = render({"services": {"projection": {"extraEnv": extra}}})

    assert _container(manifests, "projection")["env"][-1] == extra[0]
    assert "REKEY_LOG_FORMAT" not in env_of(_container(manifests, "acl"))


def test_catalog_checksum_rolls_pods_only_when_the_catalog_changes() -> None:
    def checksum(values: dict[str, Any]) -> str:
        return str(
            _deployment(render(values), "acl")["spec"]["template"]["metadata"]["annotations"]["checksum/catalog"]
        )

    baseline = checksum({})

    assert baseline == hashlib.sha256(default_values()["catalog"].encode()).hexdigest()
    assert checksum({"catalog": default_values()["catalog"] + "# edited\n"}) != baseline
    assert checksum({"services": {"acl": {"replicas": 7}}, "logLevel": "ERROR"}) == baseline


def test_prometheus_scrape_annotations() -> None:
    annotations = _deployment(render(), "sink")["spec"]["template"]["metadata"]["annotations"]
    without = _deployment(render({"metrics": {"podAnnotations": False}}), "sink")["spec"]["template"]["metadata"]

    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "6066"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert not [key for key in without["annotations"] if key.startswith("prometheus.io/")]


@pytest.mark.parametrize(
    ("values", "image"),
    [
        ({}, "ghcr.io/rekey/rekey:0.1.0"),
        ({"image": {"tag": "1.2.3"}}, "ghcr.io/rekey/rekey:1.2.3"),
        ({"image": {"digest": "sha256:" + "a" * 64}}, "ghcr.io/rekey/rekey@sha256:" + "a" * 64),
        ({"global": {"imageRegistry": "mirror.local"}}, "mirror.local/rekey/rekey:0.1.0"),
    ],
)
def test_image_reference(values: dict[str, Any], image: str) -> None:
    assert _container(render(values), "reconciler")["image"] == image


def test_pull_secrets_are_merged_and_deduplicated() -> None:
    manifests = render({"global": {"imagePullSecrets": ["a", "b"]}, "image": {"pullSecrets": ["b", "c"]}})

    pod = _deployment(manifests, "acl")["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "a"}, {"name": "b"}, {"name": "c"}]


def test_split_acl_stages_are_two_deployments_each_scaled_on_its_own_input() -> None:
    manifests = render_ci("acl-stages-values")

    assert not manifests.find("Deployment", full_name("acl"))
    for stage in ("translate", "sequence"):
        container = _container(manifests, f"acl-{stage}")
        assert [*container["command"], *container["args"]] == ["rekey", "run", "acl", "--stage", stage]
        env = env_of(container)
        assert (env["REKEY_APP_ID"]["value"], env["REKEY_INTERNAL_PARTITIONS"]["value"]) == ("rekey-acl", "16")
    assert _deployment(manifests, "acl-sequence")["spec"]["replicas"] == 3
    assert "replicas" not in _deployment(manifests, "acl-translate")["spec"]  # KEDA owns it
    scaled = manifests.get("ScaledObject", full_name("acl-translate"))
    assert scaled["spec"]["maxReplicaCount"] == 6
    assert scaled["spec"]["triggers"][0]["metadata"]["topic"] == "crm.public.interactions"


def test_a_stage_cannot_have_a_consumer_group_of_its_own() -> None:
    """Both stages are one consumer group (the sequencing topic is named after it)."""
    values = {"services": {"acl": {"stages": {"split": True, "sequence": {"consumerGroup": "other"}}}}}
    assert "'/services/acl/stages/sequence': additional properties 'consumerGroup' not allowed" in render_error(values)


def test_a_stage_cannot_scale_past_its_inputs_partitions() -> None:
    values = {"services": {"acl": {"stages": {"split": True, "sequence": {
        "inputTopicPartitions": 4, "hpa": {"enabled": True, "maxReplicas": 8}}}}}}
    assert "services.acl-sequence.hpa.maxReplicas (8) exceeds" in render_error(values)

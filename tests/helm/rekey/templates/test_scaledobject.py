"""templates/scaledobject.yaml: KEDA ScaledObjects on consumer lag, bounded by the input partitions."""

from __future__ import annotations

import pytest

from ..rendering import SERVICES, full_name, render, render_ci, render_error


def test_no_scaledobject_by_default() -> None:
    manifests = render()

    assert manifests.all("ScaledObject") == []
    assert manifests.all("TriggerAuthentication") == []


def test_scaled_objects_target_their_deployments_within_bounds() -> None:
    manifests = render_ci("keda-values")

    bounds = {
        name: (obj["spec"]["minReplicaCount"], obj["spec"]["maxReplicaCount"])
        for name, obj in ((o["metadata"]["name"], o) for o in manifests.all("ScaledObject"))
    }
    assert bounds == {full_name("acl"): (1, 12), full_name("projection"): (0, 16), full_name("sink"): (1, 8)}
    for obj in manifests.all("ScaledObject"):
        assert obj["spec"]["scaleTargetRef"]["name"] == obj["metadata"]["name"]
        assert manifests.find("Deployment", obj["metadata"]["name"]) is not None


def test_kafka_trigger_measures_the_consumer_lag() -> None:
    manifests = render_ci("keda-values")

    (trigger,) = manifests.get("ScaledObject", full_name("acl"))["spec"]["triggers"]
    metadata = trigger["metadata"]
    assert trigger["type"] == "kafka"
    assert metadata["bootstrapServers"] == "kafka-bootstrap.kafka:9093"
    assert metadata["consumerGroup"] == "rekey-acl"
    assert metadata["topic"] == "crm.public.interactions"
    assert metadata["lagThreshold"] == "5000"
    assert metadata["activationLagThreshold"] == "0"
    assert metadata["allowIdleConsumers"] == "false"
    assert metadata["sasl"] == "scram_sha256"
    assert metadata["tls"] == "enable"
    # Without inputTopic the scaler measures every topic of the group.
    (projection,) = manifests.get("ScaledObject", full_name("projection"))["spec"]["triggers"]
    assert "topic" not in projection["metadata"]
    assert projection["metadata"]["activationLagThreshold"] == "10"


def test_scaler_authenticates_through_the_existing_secrets() -> None:
    manifests = render_ci("keda-values")

    (trigger,) = manifests.get("ScaledObject", full_name("sink"))["spec"]["triggers"]
    auth = manifests.get("TriggerAuthentication", trigger["authenticationRef"]["name"])
    assert auth["spec"]["secretTargetRef"] == [
        {"parameter": "username", "name": "rekey-kafka-credentials", "key": "username"},
        {"parameter": "password", "name": "rekey-kafka-credentials", "key": "password"},
        {"parameter": "ca", "name": "rekey-kafka-ca", "key": "ca.crt"},
    ]


def test_plaintext_kafka_needs_no_trigger_authentication() -> None:
    manifests = render({"services": {"acl": {"keda": {"enabled": True}}}})

    (trigger,) = manifests.get("ScaledObject", full_name("acl"))["spec"]["triggers"]
    assert "authenticationRef" not in trigger
    assert not {"sasl", "tls"} & set(trigger["metadata"])
    assert manifests.all("TriggerAuthentication") == []


@pytest.mark.parametrize("service", SERVICES)
def test_max_replica_count_above_the_partitions_fails_rendering(service: str) -> None:
    values = {
        "services": {
            service: {
                "inputTopicPartitions": 4,
                "consumerGroup": "group",
                "keda": {"enabled": True, "maxReplicaCount": 5},
            }
        }
    }

    message = render_error(values)

    assert f"services.{service}.keda.maxReplicaCount (5) exceeds services.{service}.inputTopicPartitions (4)" in message


def test_keda_needs_the_consumer_group() -> None:
    message = render_error({"services": {"sink": {"keda": {"enabled": True}}}})

    assert "services.sink.keda.enabled is true: set services.sink.consumerGroup" in message


def test_min_above_max_fails_rendering() -> None:
    values = {"services": {"acl": {"keda": {"enabled": True, "minReplicaCount": 5, "maxReplicaCount": 3}}}}

    assert "services.acl.keda.minReplicaCount (5) exceeds services.acl.keda.maxReplicaCount (3)" in render_error(values)

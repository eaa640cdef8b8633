"""values.schema.json: wrong values are rejected before any template runs, with a message naming
the offending field (Helm validates on lint, template, install and upgrade)."""

from __future__ import annotations

import json
from typing import Any

import helm_python as helm
import pytest

from .rendering import CHART_DIR, CI_SCENARIOS, SERVICES, chart, ci_values, render_error


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((CHART_DIR / "values.schema.json").read_text())
    return schema


def test_schema_is_draft_07() -> None:
    assert _schema()["$schema"] == "http://json-schema.org/draft-07/schema#"


def test_services_object_allows_exactly_the_four_services() -> None:
    services = _schema()["properties"]["services"]

    assert services["additionalProperties"] is False
    assert sorted(services["properties"]) == sorted(SERVICES)


@pytest.mark.parametrize("scenario", [None, *CI_SCENARIOS])
def test_defaults_and_ci_scenarios_pass_the_schema(scenario: str | None) -> None:
    chart().validate_schema(ci_values(scenario) if scenario else None)


REJECTED = [
    pytest.param({"services": {"acl": {"replicas": -1}}}, "/services/acl/replicas", "minimum", id="negative-replicas"),
    pytest.param(
        {"services": {"ingest": {"enabled": True}}}, "/services", "additional properties 'ingest'", id="unknown-service"
    ),
    pytest.param(
        {"services": {"sink": {"terminationGracePeriodSeconds": 30}}},
        "/services/sink/terminationGracePeriodSeconds",
        "minimum",
        id="grace-period-below-shutdown",
    ),
    pytest.param(
        {"services": {"projection": {"inputTopicPartitions": 0}}},
        "/services/projection/inputTopicPartitions",
        "minimum",
        id="zero-partitions",
    ),
    pytest.param(
        {"services": {"acl": {"hpa": {"minReplicas": 0}}}}, "/services/acl/hpa/minReplicas", "minimum", id="hpa-min-0"
    ),
    pytest.param(
        {"services": {"acl": {"keda": {"minReplicaCount": -2}}}},
        "/services/acl/keda/minReplicaCount",
        "minimum",
        id="keda-negative-min",
    ),
    pytest.param(
        {"services": {"acl": {"keda": {"offsetResetPolicy": "oldest"}}}},
        "/services/acl/keda/offsetResetPolicy",
        "value must be one of",
        id="keda-offset-policy",
    ),
    pytest.param(
        {"services": {"acl": {"replicas": "two"}}},
        "/services/acl/replicas",
        "got string, want integer",
        id="replicas-type",
    ),
    pytest.param(
        {"services": {"acl": {"pdb": {"maxUnavailable": "half"}}}},
        "/services/acl/pdb/maxUnavailable",
        "'half' does not match pattern",
        id="pdb-not-int-or-percent",
    ),
    pytest.param(
        {"services": {"acl": {"replica": 3}}}, "/services/acl", "additional properties 'replica'", id="typo-in-service"
    ),
    pytest.param(
        {"kafka": {"securityProtocol": "TLS"}}, "/kafka/securityProtocol", "value must be one of", id="protocol-enum"
    ),
    pytest.param(
        {"kafka": {"sasl": {"mechanism": "GSSAPI"}}}, "/kafka/sasl/mechanism", "value must be one of", id="sasl-enum"
    ),
    pytest.param(
        {"processingGuarantee": "exactly-once"}, "/processingGuarantee", "value must be one of", id="guarantee-enum"
    ),
    pytest.param({"logLevel": "TRACE"}, "/logLevel", "value must be one of", id="log-level-enum"),
    pytest.param({"image": {"digest": "latest"}}, "/image/digest", "does not match pattern", id="image-digest"),
    pytest.param(
        {"topicsJob": {"hookDeletePolicy": "always"}}, "/topicsJob/hookDeletePolicy", "does not match", id="hook-policy"
    ),
    pytest.param(
        {"backfill": {"spark": {"master": "local[*]"}}}, "/backfill/spark/master", "does not match", id="spark-master"
    ),
    pytest.param({"servics": {}}, "", "additional properties 'servics'", id="top-level-typo"),
    # Credentials can only come from Secrets: the schema has nowhere to put a plaintext one.
    pytest.param(
        {"kafka": {"sasl": {"password": "hunter2"}}}, "/kafka/sasl", "additional properties 'password'", id="sasl-pwd"
    ),
    pytest.param(
        {"schemaRegistry": {"auth": {"password": "hunter2"}}},
        "/schemaRegistry/auth",
        "additional properties 'password'",
        id="registry-password",
    ),
    pytest.param(
        {"sinkDatabase": {"dsn": "postgresql://u:p@db/x"}}, "/sinkDatabase", "additional properties 'dsn'", id="dsn"
    ),
]


@pytest.mark.parametrize(("values", "field", "reason"), REJECTED)
def test_schema_rejects_wrong_values_naming_the_field(values: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(helm.HelmValuesError) as raised:
        chart().validate_schema(values)

    message = str(raised.value)
    assert f"at '{field}'" in message
    assert reason in message


@pytest.mark.parametrize(("values", "field", "reason"), REJECTED[:2])
def test_rendering_applies_the_schema_too(values: dict[str, Any], field: str, reason: str) -> None:
    message = render_error(values)

    assert "values don't meet the specifications of the schema" in message
    assert f"at '{field}'" in message
    assert reason in message


def _property_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                names |= set(value)
            names |= _property_names(value)
    elif isinstance(node, list):
        for item in node:
            names |= _property_names(item)
    return names


def test_schema_has_no_field_for_a_plaintext_credential() -> None:
    names = {name.lower() for name in _property_names(_schema())}

    assert names & {"password", "username", "dsn", "token", "secret", "jaas"} == set()
    assert {"existingsecret", "passwordkey", "usernamekey", "dsnkey"} <= names

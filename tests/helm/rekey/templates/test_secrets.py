"""No credential is ever rendered in plaintext: every one is a reference to an existing Secret."""

from __future__ import annotations

import re

import pytest

from ..rendering import CI_SCENARIOS, containers, render, render_ci, render_error

CREDENTIAL = re.compile(r"PASSWORD|USERNAME|DATABASE_URL|TOKEN|SECRET")  # a database URL carries its password


@pytest.mark.parametrize("scenario", [None, *CI_SCENARIOS])
def test_credentials_are_only_secret_references(scenario: str | None) -> None:
    manifests = render_ci(scenario) if scenario else render()
    credential_env = [
        (where, entry)
        for obj in manifests.all()
        for where, container in containers(obj)
        for entry in container.get("env", [])
        if CREDENTIAL.search(entry["name"])
    ]

    assert manifests.all("Secret") == []
    for where, entry in credential_env:
        assert set(entry) == {"name", "valueFrom"}, f"{where}: {entry['name']} is not a secret reference"
        assert set(entry["valueFrom"]) == {"secretKeyRef"}, where


def test_production_scenario_references_every_credential() -> None:
    names = {
        entry["name"]
        for obj in render_ci("production-tls-values").all()
        for _, container in containers(obj)
        for entry in container.get("env", [])
        if CREDENTIAL.search(entry["name"])
    }

    assert names == {
        "REKEY_KAFKA_SASL_USERNAME",
        "REKEY_KAFKA_SASL_PASSWORD",
        "REKEY_REGISTRY_USERNAME",
        "REKEY_REGISTRY_PASSWORD",
        "REKEY_SINK_DATABASE_URL",
    }


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_without_a_secret_fails_rendering(protocol: str) -> None:
    message = render_error({"kafka": {"securityProtocol": protocol, "sasl": {"mechanism": "PLAIN"}}})

    assert f"kafka.securityProtocol is {protocol}: set kafka.sasl.existingSecret" in message


def test_sasl_without_a_mechanism_fails_rendering() -> None:
    message = render_error({"kafka": {"securityProtocol": "SASL_SSL", "sasl": {"existingSecret": "kafka"}}})

    assert "set kafka.sasl.mechanism" in message


def test_sink_services_without_the_dsn_secret_fail_rendering() -> None:
    message = render_error({"sinkDatabase": {"existingSecret": ""}})

    assert "services.sink.enabled is true: set sinkDatabase.existingSecret" in message


def test_no_dsn_secret_needed_without_sink_and_reconciler() -> None:
    values = {
        "sinkDatabase": {"existingSecret": ""},
        "services": {"sink": {"enabled": False}, "reconciler": {"enabled": False}},
    }

    assert len(render(values).all("Deployment")) == 2

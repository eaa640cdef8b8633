"""The chart's environment against the code's settings: every `REKEY_*` variable a rendered container gets is one
the settings of the command it runs read (a name the code does not read is silently ignored, so a typo or a
renamed setting would leave the service on its default: the sink once fell back to SQLite that way)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_settings import BaseSettings

from kafka_rekey.services.reconciliation.settings import ReconcilerSettings
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.services.settings import ServiceSettings
from kafka_rekey.services.sink.settings import SinkSettings
from tests.helm.rekey.rendering import CI_SCENARIOS, containers, env_of, render, render_ci, render_error

SETTINGS_OF_SERVICE: dict[str, type[BaseSettings]] = {
    "acl": RuntimeSettings,
    "projection": RuntimeSettings,
    "sink": SinkSettings,
    "reconciler": ReconcilerSettings,
}


def environment_names(settings: type[BaseSettings]) -> set[str]:
    """Every environment variable `settings` reads: its prefix plus each field, nested settings with theirs."""
    prefix = settings.model_config.get("env_prefix", "")
    names: set[str] = set()
    for name, field in settings.model_fields.items():
        nested = field.annotation
        if isinstance(nested, type) and issubclass(nested, BaseSettings):
            names |= environment_names(nested)
        else:
            names.add(f"{prefix}{name}".upper())
    return names


def _rekey_env(container: dict[str, Any]) -> set[str]:
    return {name for name in env_of(container) if name.startswith("REKEY_")}


def _command_settings(container: dict[str, Any]) -> type[BaseSettings]:
    """The settings the container's command reads: a service's own for `rekey run <service>`, else the shared."""
    args = container.get("args", [])
    if args[:1] == ["run"]:
        return SETTINGS_OF_SERVICE[args[1]]
    return ServiceSettings


def test_environment_names_cover_nested_settings() -> None:
    names = environment_names(ReconcilerSettings)
    assert {"REKEY_KAFKA_BOOTSTRAP_SERVERS", "REKEY_REGISTRY_URL", "REKEY_SINK_DATABASE_URL", "REKEY_SINK_TOPIC",
            "REKEY_RECONCILE_WINDOW_S", "REKEY_DATA_DIR"} <= names
    assert "REKEY_SINK_DSN" not in names


@pytest.mark.parametrize("scenario", ("default", *CI_SCENARIOS))
def test_every_rekey_variable_the_chart_sets_is_read_by_the_settings(scenario: str) -> None:
    manifests = render() if scenario == "default" else render_ci(scenario)
    checked = 0
    for obj in manifests.all():
        for name, container in containers(obj):
            unknown = _rekey_env(container) - environment_names(_command_settings(container))
            assert not unknown, f"{obj['kind']} {obj['metadata']['name']} container {name}: {sorted(unknown)} " \
                                f"are read by no setting of `{' '.join(container.get('args', [])[:2])}`"
            checked += 1
    assert checked, "no container rendered"


@pytest.mark.parametrize("service", ("sink", "reconciler"))
def test_sink_services_get_their_database_and_topic(service: str) -> None:
    container = next(c for obj in render_ci("minimal-values").all("Deployment") for n, c in containers(obj)
                     if n.endswith(f"/{service}"))
    env = env_of(container)
    assert {"REKEY_SINK_DATABASE_URL", "REKEY_SINK_TOPIC"} <= set(env)
    assert env["REKEY_SINK_TOPIC"]["value"] == "interaction_events_low_v2"


OAUTH_MTLS = {
    "kafka": {"securityProtocol": "SASL_SSL",
              "sasl": {"mechanism": "OAUTHBEARER", "existingSecret": "rekey-oidc",
                       "oauth": {"tokenEndpointUrl": "https://idp.example.com/oauth2/token", "scope": "kafka"}},
              "tls": {"caExistingSecret": "rekey-kafka-ca", "clientCertExistingSecret": "rekey-kafka-client"}},
    "sinkDatabase": {"existingSecret": "rekey-sink"},
}


def test_oauthbearer_and_mtls_render_what_the_settings_read() -> None:
    manifests = render(OAUTH_MTLS)
    deployment = next(obj for obj in manifests.all("Deployment") if obj["metadata"]["name"].endswith("-acl"))
    [(_, container)] = list(containers(deployment))
    env = env_of(container)
    assert env["REKEY_KAFKA_SASL_MECHANISM"]["value"] == "OAUTHBEARER"
    assert env["REKEY_KAFKA_OAUTH_TOKEN_ENDPOINT_URL"]["value"] == "https://idp.example.com/oauth2/token"
    assert env["REKEY_KAFKA_OAUTH_SCOPE"]["value"] == "kafka"
    assert env["REKEY_KAFKA_OAUTH_CLIENT_ID"]["valueFrom"]["secretKeyRef"] == {"name": "rekey-oidc", "key": "client-id"}
    assert env["REKEY_KAFKA_OAUTH_CLIENT_SECRET"]["valueFrom"]["secretKeyRef"]["key"] == "client-secret"
    assert "REKEY_KAFKA_SASL_USERNAME" not in env and "REKEY_KAFKA_SASL_PASSWORD" not in env
    assert env["REKEY_KAFKA_SSL_CERTIFICATE_LOCATION"]["value"] == "/etc/rekey-tls/kafka-client/tls.crt"
    assert env["REKEY_KAFKA_SSL_KEY_LOCATION"]["value"] == "/etc/rekey-tls/kafka-client/tls.key"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert mounts["kafka-client-cert"] == "/etc/rekey-tls/kafka-client"
    assert volumes["kafka-client-cert"]["secret"]["secretName"] == "rekey-kafka-client"
    assert not _rekey_env(container) - environment_names(RuntimeSettings)


def test_oauthbearer_without_a_token_endpoint_is_refused() -> None:
    values = {**OAUTH_MTLS, "kafka": {**OAUTH_MTLS["kafka"], "sasl": {"mechanism": "OAUTHBEARER",
                                                                      "existingSecret": "rekey-oidc"}}}
    assert "set kafka.sasl.oauth.tokenEndpointUrl" in render_error(values)


def test_keda_authenticates_like_the_services() -> None:
    values = {**OAUTH_MTLS, "services": {"acl": {"consumerGroup": "rekey-acl", "keda": {"enabled": True}}}}
    manifests = render(values)
    auth = next(obj for obj in manifests.all("TriggerAuthentication") if obj["metadata"]["name"].endswith("-acl"))
    refs = {ref["parameter"]: (ref["name"], ref["key"]) for ref in auth["spec"]["secretTargetRef"]}
    assert refs["username"] == ("rekey-oidc", "client-id") and refs["password"] == ("rekey-oidc", "client-secret")
    assert refs["cert"] == ("rekey-kafka-client", "tls.crt") and refs["key"] == ("rekey-kafka-client", "tls.key")
    scaled = next(obj for obj in manifests.all("ScaledObject") if obj["metadata"]["name"].endswith("-acl"))
    metadata = scaled["spec"]["triggers"][0]["metadata"]
    assert (metadata["sasl"], metadata["oauthTokenEndpointUri"], metadata["scopes"]) == (
        "oauthbearer", "https://idp.example.com/oauth2/token", "kafka")

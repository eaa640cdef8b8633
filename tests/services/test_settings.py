"""Connection settings: each way of reaching Kafka and the registry becomes the client configuration it needs, and
an incomplete one is refused naming the variables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings, ServiceSettings, describe_invalid_settings


def _kafka(monkeypatch: pytest.MonkeyPatch, **env: str) -> KafkaSettings:
    for name, value in env.items():
        monkeypatch.setenv(f"REKEY_KAFKA_{name.upper()}", value)
    return KafkaSettings()


def test_plaintext_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _kafka(monkeypatch, bootstrap_servers="k1:9092,k2:9092").librdkafka()
    assert config == {"bootstrap.servers": "k1:9092,k2:9092", "security.protocol": "PLAINTEXT"}


def test_mutual_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _kafka(monkeypatch, security_protocol="SSL", ssl_ca_location="/certs/ca.pem",
                    ssl_certificate_location="/certs/client.pem", ssl_key_location="/certs/client.key",
                    ssl_key_password="k3y").librdkafka()
    assert config["security.protocol"] == "SSL"
    assert (config["ssl.ca.location"], config["ssl.certificate.location"], config["ssl.key.location"]) == (
        "/certs/ca.pem", "/certs/client.pem", "/certs/client.key")
    assert config["ssl.key.password"] == "k3y"
    assert "sasl.mechanism" not in config


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_with_a_password(monkeypatch: pytest.MonkeyPatch, mechanism: str) -> None:
    settings = _kafka(monkeypatch, security_protocol="SASL_SSL", sasl_mechanism=mechanism, sasl_username="svc",
                      sasl_password="s3cret")
    config = settings.librdkafka()
    assert (config["sasl.mechanism"], config["sasl.username"], config["sasl.password"]) == (mechanism, "svc", "s3cret")
    assert "s3cret" not in repr(settings)


def test_oauthbearer_uses_oidc_client_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _kafka(monkeypatch, security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                    oauth_token_endpoint_url="https://idp/token", oauth_client_id="rekey", oauth_client_secret="c",
                    oauth_scope="kafka").librdkafka()
    assert config["sasl.mechanism"] == "OAUTHBEARER"
    assert config["sasl.oauthbearer.method"] == "oidc"
    assert (config["sasl.oauthbearer.token.endpoint.url"], config["sasl.oauthbearer.client.id"],
            config["sasl.oauthbearer.client.secret"], config["sasl.oauthbearer.scope"]) == (
        "https://idp/token", "rekey", "c", "kafka")
    assert "sasl.username" not in config


def test_gssapi(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _kafka(monkeypatch, security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI",
                    kerberos_principal="rekey@EXAMPLE.COM", kerberos_keytab="/etc/rekey.keytab").librdkafka()
    assert (config["sasl.kerberos.service.name"], config["sasl.kerberos.principal"],
            config["sasl.kerberos.keytab"]) == ("kafka", "rekey@EXAMPLE.COM", "/etc/rekey.keytab")


def test_a_properties_file_passes_any_other_property(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("# tuning\nclient.rack = eu-west-1a\n\nsocket.keepalive.enable=true\n"
                          "bootstrap.servers=ignored:1\n")
    config = _kafka(monkeypatch, bootstrap_servers="k:9092", properties_file=str(properties)).librdkafka()
    assert config["client.rack"] == "eu-west-1a" and config["socket.keepalive.enable"] == "true"
    assert config["bootstrap.servers"] == "k:9092"  # the settings take precedence


def test_a_broken_properties_line_names_the_file_and_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("client.rack=a\nnot a property\n")
    with pytest.raises(ValueError, match=r"client.properties:2: expected `name=value`"):
        _kafka(monkeypatch, properties_file=str(properties)).librdkafka()


@pytest.mark.parametrize(("env", "named"), [
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", "oauth_client_id": "x"},
     "SASL mechanism OAUTHBEARER needs REKEY_KAFKA_OAUTH_TOKEN_ENDPOINT_URL, REKEY_KAFKA_OAUTH_CLIENT_SECRET"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "u"},
     "SASL mechanism SCRAM-SHA-512 needs REKEY_KAFKA_SASL_PASSWORD"),
    ({"sasl_mechanism": "PLAIN", "sasl_username": "u", "sasl_password": "p"},
     "REKEY_KAFKA_SASL_MECHANISM=PLAIN needs REKEY_KAFKA_SECURITY_PROTOCOL SASL_SSL or SASL_PLAINTEXT, not PLAINTEXT"),
    ({"security_protocol": "SSL", "ssl_certificate_location": "/c.pem"},
     "mTLS needs both REKEY_KAFKA_SSL_CERTIFICATE_LOCATION and REKEY_KAFKA_SSL_KEY_LOCATION"),
])
def test_an_incomplete_setup_is_refused_naming_the_variables(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                                             named: str) -> None:
    with pytest.raises(ValidationError) as raised:
        _kafka(monkeypatch, **env)
    assert describe_invalid_settings(raised.value) == f"invalid setting {named}"


def test_registry_basic_and_bearer_auth_are_exclusive() -> None:
    with pytest.raises(ValidationError, match="not both"):
        RegistrySettings(username="u", password="p", bearer_token="t")  # type: ignore[arg-type]


def test_the_registry_client_sends_the_bearer_token() -> None:
    with SchemaRegistryClient(RegistrySettings(bearer_token="t0ken")) as registry:  # type: ignore[arg-type]
        assert registry._http.headers["Authorization"] == "Bearer t0ken"


def test_paths_are_taken_from_the_working_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REKEY_DATA_DIR", raising=False)
    monkeypatch.delenv("REKEY_CATALOG_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    settings = ServiceSettings()
    assert settings.catalog_path == tmp_path / "catalog" / "topics.yaml"
    assert settings.data_dir == tmp_path / "var" / "state"
    monkeypatch.setenv("REKEY_DATA_DIR", "~/rekey-state")
    assert ServiceSettings().data_dir == Path.home() / "rekey-state"


CONFIG = """\
kafka:
  bootstrap_servers: broker-1:9093,broker-2:9093
  security_protocol: SASL_SSL
  sasl_mechanism: SCRAM-SHA-512
  sasl_username: rekey
  sasl_password: from-the-file
registry:
  url: https://registry.example:8081
catalog_path: /etc/rekey/topics.yaml
processing_guarantee: exactly_once
sink:
  table: calls
"""


def test_a_config_file_holds_each_group_under_its_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kafka_rekey.services.sink.settings import SinkSettings

    config = tmp_path / "rekey.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("REKEY_CONFIG", str(config))
    monkeypatch.setenv("REKEY_KAFKA_SASL_PASSWORD", "from-the-environment")  # the environment wins

    settings = SinkSettings()
    kafka = settings.kafka.librdkafka()
    assert (kafka["bootstrap.servers"], kafka["sasl.mechanism"], kafka["sasl.username"], kafka["sasl.password"]) == (
        "broker-1:9093,broker-2:9093", "SCRAM-SHA-512", "rekey", "from-the-environment")
    assert settings.registry.url == "https://registry.example:8081"
    assert (settings.catalog_path, settings.processing_guarantee) == (Path("/etc/rekey/topics.yaml"), "exactly_once")
    assert settings.sink.table == "calls"


def test_a_bad_value_in_the_config_file_names_its_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "rekey.yaml"
    config.write_text("kafka:\n  security_protocol: SASL_TLS\n")
    monkeypatch.setenv("REKEY_CONFIG", str(config))
    with pytest.raises(ValidationError) as raised:
        KafkaSettings()
    message = describe_invalid_settings(raised.value)
    assert message.startswith(f"invalid setting REKEY_KAFKA_SECURITY_PROTOCOL (or kafka.security_protocol in "
                              f"{config}) ('SASL_TLS'): Input should be")


@pytest.mark.parametrize(("content", "problem"), [(None, "cannot read it"), ("kafka: [", "not valid YAML"),
                                                  ("- a\n- b\n", "expected a mapping of settings, got a list")])
def test_an_unreadable_config_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str | None,
                                            problem: str) -> None:
    config = tmp_path / f"rekey-{problem.split()[0]}.yaml"
    if content is not None:
        config.write_text(content)
    monkeypatch.setenv("REKEY_CONFIG", str(config))
    with pytest.raises(ValueError, match=f"REKEY_CONFIG={config}: {problem}"):
        KafkaSettings()

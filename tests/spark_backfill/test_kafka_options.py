"""The services' Kafka settings as the Spark Kafka connector's options (the Java client's names), for every way
of connecting."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.spark_backfill.extract import spark_kafka_options


def _options(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, str]:
    for name, value in env.items():
        monkeypatch.setenv(f"REKEY_KAFKA_{name.upper()}", value)
    return spark_kafka_options(KafkaSettings())


def test_plaintext(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _options(monkeypatch, bootstrap_servers="k1:9092") == {
        "kafka.bootstrap.servers": "k1:9092", "kafka.security.protocol": "PLAINTEXT"}


def test_scram_over_tls_with_a_pem_ca(monkeypatch: pytest.MonkeyPatch) -> None:
    options = _options(monkeypatch, security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                       sasl_username="rekey", sasl_password="s3cret", ssl_ca_location="/certs/ca.pem")
    assert options["kafka.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="rekey" password="s3cret";')
    assert (options["kafka.ssl.truststore.type"], options["kafka.ssl.truststore.location"]) == ("PEM", "/certs/ca.pem")


def test_mutual_tls_hands_the_java_client_the_pem_texts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    certificate, key = tmp_path / "client.pem", tmp_path / "client.key"
    certificate.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n")
    options = _options(monkeypatch, security_protocol="SSL", ssl_certificate_location=str(certificate),
                       ssl_key_location=str(key), ssl_key_password="k3y")
    assert options["kafka.ssl.keystore.type"] == "PEM"
    assert options["kafka.ssl.keystore.certificate.chain"] == certificate.read_text()
    assert (options["kafka.ssl.keystore.key"], options["kafka.ssl.key.password"]) == (key.read_text(), "k3y")


def test_oauthbearer_client_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    options = _options(monkeypatch, security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                       oauth_token_endpoint_url="https://idp/token", oauth_client_id="rekey",
                       oauth_client_secret="shh", oauth_scope="kafka")
    assert options["kafka.sasl.login.callback.handler.class"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler")
    assert options["kafka.sasl.oauthbearer.token.endpoint.url"] == "https://idp/token"
    assert options["kafka.sasl.jaas.config"] == ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule '
                                                 'required clientId="rekey" clientSecret="shh" scope="kafka";')


def test_kerberos_and_the_properties_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("# site settings\nclient.rack=eu-1a\nsecurity.protocol=PLAINTEXT\n")
    options = _options(monkeypatch, security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI",
                       kerberos_principal="rekey@EXAMPLE.COM", kerberos_keytab="/etc/rekey.keytab",
                       properties_file=str(properties))
    assert options["kafka.sasl.jaas.config"] == (
        'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
        'keyTab="/etc/rekey.keytab" principal="rekey@EXAMPLE.COM";')
    assert options["kafka.sasl.kerberos.service.name"] == "kafka"
    assert options["kafka.client.rack"] == "eu-1a"
    assert options["kafka.security.protocol"] == "SASL_PLAINTEXT"  # the settings win over the file

"""An unreachable cluster is reported in one error naming the address and librdkafka's root cause (refused, does
not resolve, TLS, authentication); the SASL settings authenticate against a real SASL listener."""

from __future__ import annotations

import pytest

from kafka_rekey.services.kafka.connectivity import KafkaUnreachable, require_kafka
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey_dev.embedded.processes import free_port
from tests.fixtures.kafka import SASL_USERS


def test_a_refused_connection_names_the_address_and_the_refusal() -> None:
    port = free_port(21000)  # nothing listens there
    with pytest.raises(KafkaUnreachable, match=rf"Kafka at 127.0.0.1:{port} is unreachable: .*Connection refused"):
        require_kafka({"bootstrap.servers": f"127.0.0.1:{port}"}, timeout=2)


def test_a_name_that_does_not_resolve_says_so() -> None:
    with pytest.raises(KafkaUnreachable, match=r"no-such-host\.invalid:9092 is unreachable: .*resolve"):
        require_kafka({"bootstrap.servers": "no-such-host.invalid:9092"}, timeout=2)


def test_a_reachable_cluster_passes(kafka_bootstrap: str) -> None:
    require_kafka({"bootstrap.servers": kafka_bootstrap}, timeout=30)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_settings_authenticate_against_a_sasl_listener(kafka_sasl_bootstrap: str, mechanism: str) -> None:
    settings = KafkaSettings(bootstrap_servers=kafka_sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism=mechanism, sasl_username="rekey", sasl_password=SASL_USERS["rekey"])
    require_kafka(settings.librdkafka(), timeout=30)


def test_a_wrong_password_says_authentication_failed(kafka_sasl_bootstrap: str) -> None:
    settings = KafkaSettings(bootstrap_servers=kafka_sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-512", sasl_username="rekey", sasl_password="wrong")
    with pytest.raises(KafkaUnreachable, match=r"is unreachable: .*Authentication failed") as raised:
        require_kafka(settings.librdkafka(), timeout=10)
    assert "wrong" not in str(raised.value)  # the secret is never in a message
    assert "\n" not in str(raised.value)


def test_tls_against_a_plaintext_listener_says_ssl(kafka_bootstrap: str) -> None:
    with pytest.raises(KafkaUnreachable, match=r"is unreachable: .*SSL"):
        require_kafka({"bootstrap.servers": kafka_bootstrap, "security.protocol": "SSL"}, timeout=5)

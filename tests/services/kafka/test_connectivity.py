"""An unreachable cluster is reported in one error naming the address and librdkafka's root cause."""

from __future__ import annotations

import pytest

from services.devtools.embedded.processes import free_port
from services.kafka.connectivity import KafkaUnreachable, require_kafka


def test_a_refused_connection_names_the_address_and_the_refusal() -> None:
    port = free_port(21000)  # nothing listens there
    with pytest.raises(KafkaUnreachable, match=rf"Kafka at 127.0.0.1:{port} is unreachable: .*Connection refused"):
        require_kafka({"bootstrap.servers": f"127.0.0.1:{port}"}, timeout=2)


def test_a_name_that_does_not_resolve_says_so() -> None:
    with pytest.raises(KafkaUnreachable, match=r"no-such-host\.invalid:9092 is unreachable: .*resolve"):
        require_kafka({"bootstrap.servers": "no-such-host.invalid:9092"}, timeout=2)


def test_a_reachable_cluster_passes(kafka_bootstrap: str) -> None:
    require_kafka({"bootstrap.servers": kafka_bootstrap}, timeout=30)

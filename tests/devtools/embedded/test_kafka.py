"""The embedded KRaft cluster: a real round trip, durability across stop + start, and a 3-node failover."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from kafka_rekey_dev.embedded.errors import PortInUse
from kafka_rekey_dev.embedded.kafka import CONTROLLER_PORT_OFFSET, KafkaCluster, ephemeral_port_range, free_base_port
from tests.support.kafka import create_topic, read_topic
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker


def _produce(bootstrap: str, topic: str, count: int, acks: str = "all") -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": True})
    failures: list[str] = []
    for i in range(count):
        producer.produce(topic, key=f"k{i % 7}".encode(), value=f"v{i}".encode(),
                         on_delivery=lambda err, _msg: failures.append(str(err)) if err else None)
    assert producer.flush(60) == 0
    assert failures == []


def test_produce_consume_round_trip(kafka_bootstrap: str, topic: str) -> None:
    _produce(kafka_bootstrap, topic, 100)
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    values: set[bytes] = set()

    def all_consumed() -> bool:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            values.add(message.value())
        return len(values) == 100

    try:
        wait_until(all_consumed, 60, "all 100 records consumed by a group member")
    finally:
        consumer.close()
    assert values == {f"v{i}".encode() for i in range(100)}


def test_stop_and_start_keeps_every_record(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path / "kafka", nodes=1, base_port=free_base_port(1, 24092))
    cluster.start()
    try:
        with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            create_topic(admin, "durable", 4)
        _produce(cluster.bootstrap_servers, "durable", 500)
        cluster.stop()
        assert cluster.running_nodes() == []
        restarted = KafkaCluster(tmp_path / "kafka")  # a new process would read cluster.json the same way
        restarted.start()
        records = read_topic(restarted.bootstrap_servers, "durable")
        assert sorted(r.value for r in records) == sorted(f"v{i}".encode() for i in range(500))
    finally:
        KafkaCluster(tmp_path / "kafka").stop()


def test_port_in_use_is_a_clear_error(kafka_bootstrap: str, tmp_path: Path) -> None:
    if "127.0.0.1" not in kafka_bootstrap:
        pytest.skip("needs the embedded broker's port")
    port = int(kafka_bootstrap.split(",")[0].rsplit(":", 1)[1])
    with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is in use"):
        KafkaCluster(tmp_path / "clash", nodes=1, base_port=port).start(timeout=10)


@pytest.mark.cluster
def test_three_nodes_elect_leaders_and_survive_a_broker_stop(embedded_cluster3: KafkaCluster) -> None:
    cluster = embedded_cluster3
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        create_topic(admin, "replicated", 6, replication=3, config={"min.insync.replicas": "2"})
        partitions = admin.list_topics("replicated", timeout=10).topics["replicated"].partitions
        assert {p.leader for p in partitions.values()} <= {1, 2, 3}
        assert all(len(p.replicas) == 3 and len(p.isrs) == 3 for p in partitions.values())

        _produce(cluster.bootstrap_servers, "replicated", 300)
        victim = partitions[0].leader
        cluster.stop_node(victim)
        try:
            def leaders_moved() -> bool:
                meta = admin.list_topics("replicated", timeout=5).topics["replicated"].partitions
                return all(p.leader not in (-1, victim) for p in meta.values())

            wait_until(leaders_moved, 60, f"new leaders elected away from stopped node {victim}")
            _produce(cluster.bootstrap_servers, "replicated", 300)  # acks=all with 2 of 3 in sync
            records = read_topic(cluster.bootstrap_servers, "replicated")
            assert len(records) == 600
            assert len({r.value for r in records}) == 300  # v0..v299 twice
        finally:
            cluster.start_node(victim)
        cluster.wait_ready()
        wait_until(lambda: all(len(p.isrs) == 3 for p in admin.list_topics("replicated", timeout=5)
                               .topics["replicated"].partitions.values()), 60, "restarted node back in sync")


def test_free_base_port_stays_out_of_the_ephemeral_range() -> None:
    ephemeral = ephemeral_port_range()
    base = free_base_port(3, ephemeral.start - 50)
    ports = [base + i for i in range(3)] + [base + CONTROLLER_PORT_OFFSET + i for i in range(3)]
    assert not any(p in ephemeral for p in ports)

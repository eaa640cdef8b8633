"""A dead letter of the live ACL says when its source record was written (`dlq.source.timestamp`, epoch ms): its
own timestamp is when it was dead-lettered."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.kafka import end_offsets
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

POISON = [b"not json", b'{"orgId": "org-1", "eventId": "e-1", "eventType": "start"}', b"[1, 2, 3]"]


def test_each_dead_letter_carries_its_source_records_timestamp(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    written_at = {value: int(time.time() * 1000) - 3_600_000 + index * 1_000 for index, value in enumerate(POISON)}
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for value, timestamp in written_at.items():
        producer.produce(source, value=value, timestamp=timestamp)
    assert producer.flush(30) == 0

    env = {"REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REKEY_REGISTRY_URL": schema_registry_url,
           "REKEY_CATALOG_PATH": str(catalog_path), "REKEY_STATE_STORE": "memory",
           "REKEY_DATA_DIR": str(tmp_path / "state"), "REKEY_APP_ID": f"rekey-acl-{uuid.uuid4().hex[:8]}",
           "REKEY_INTERNAL_PARTITIONS": "4"}
    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        wait_until(lambda: sum(end_offsets(kafka_bootstrap, catalog.dlq_topic).values()) >= len(POISON), 120,
                   f"{len(POISON)} dead letters in {catalog.dlq_topic}")
    finally:
        acl.stop()

    dead = list(iter_topic({"bootstrap.servers": kafka_bootstrap}, catalog.dlq_topic, idle_timeout=10))
    assert sorted(message.value() for message in dead) == sorted(POISON)
    for message in dead:
        headers = dict(message.headers() or [])
        assert headers["dlq.source.topic"] == source.encode()
        assert headers["dlq.source.timestamp"] == str(written_at[message.value()]).encode(), headers

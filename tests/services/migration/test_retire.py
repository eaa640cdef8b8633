"""`rekey migrate retire`: refused while a group reads the topic, a producer writes it or the catalog routes to
it; once all stop, marked `retired: true` in the catalog, `topics apply` reports it while it exists, and
`--delete --yes` deletes it."""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.catalog_files import load_catalog
from tests.services.migration.conftest import Stream, rekey
from tests.support.kafka import create_topic
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker]


def _with_legacy_topic(stream: Stream, admin: AdminClient) -> str:
    """A family-role topic no family routes to any more (an older version), created on the broker."""
    low = stream.catalog.family("interaction_events").tiers.low
    legacy = low.replace("interaction_events_low", "interaction_events_legacy").replace("_v2", "_v1")
    text = stream.path.read_text()
    start = text.index(f"  - name: {low}\n")
    end = text.index("  - name:", start + 10)
    stream.path.write_text(text[:end] + text[start:end].replace(low, legacy) + text[end:])
    create_topic(admin, legacy, stream.catalog.topic(low).partitions)
    return legacy


def test_retire_refuses_while_used_then_marks_and_deletes(stream: Stream, kafka_admin: AdminClient) -> None:
    legacy = _with_legacy_topic(stream, kafka_admin)
    producer = Producer({"bootstrap.servers": stream.bootstrap})
    for i in range(20):
        producer.produce(legacy, key=f"k{i}".encode(), value=b"old")
    assert producer.flush(30) == 0

    def retire(topic: str, *more: str) -> tuple[int, str]:
        return rekey("migrate", "retire", "--topic", topic, "--watch", "2s", *more, *stream.options)

    code, output = retire(stream.catalog.family("org_timeline").tiers.low)
    assert code == 3 and "still a family topic" in output, output
    source = stream.catalog.sources[0].name
    code, output = retire(source)
    assert code == 3 and "the catalog still feeds" in output, output

    group = f"old-reader-{uuid.uuid4().hex[:8]}"
    assigned, stop = threading.Event(), threading.Event()

    def reader() -> None:
        consumer = Consumer({"bootstrap.servers": stream.bootstrap, "group.id": group,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([legacy], on_assign=lambda *_: assigned.set())
        while not stop.is_set():
            consumer.poll(0.2)
        consumer.commit(asynchronous=False)
        consumer.close()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        wait_until(assigned.is_set, 60, "the old reader got its partitions")
        code, output = retire(legacy)
        assert code == 3 and f"group {group} has active members" in output, output
    finally:
        stop.set()
        thread.join(30)

    writing = threading.Event()

    def writer() -> None:
        while not writing.is_set():
            producer.produce(legacy, value=b"still")
            producer.flush(5)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        code, output = retire(legacy)
        assert code == 3 and "is still written" in output, output
    finally:
        writing.set()
        thread.join(30)

    code, output = retire(legacy)
    assert code == 0 and "marked retired" in output, output
    assert next(t for t in load_catalog(stream.path).topics if t.name == legacy).retired
    code, output = rekey("topics", "apply", "-o", "json", *stream.options)
    assert legacy in output and '"retired"' in output, output

    code, output = retire(legacy, "--delete", "--yes")
    assert code == 0 and "deleted" in output, output
    wait_until(lambda: legacy not in kafka_admin.list_topics(timeout=10).topics, 30, f"{legacy} deleted")

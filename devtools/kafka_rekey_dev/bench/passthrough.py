"""Baseline (a) of `rekey bench acl`, the ceiling: a plain confluent-kafka consume -> produce loop in Python.

Per source record it calls the same compiled `shared.translation` translator and `shared.routing.route_in` as the
ACL (so the shared CPU cost is included) and produces the *source value bytes unchanged* once per family the
source feeds, keyed by that family's output key, to one scratch topic.
No internal hop, no sequencing, no Avro, no faust.

Run as a process: `python -m kafka_rekey_dev.bench.passthrough SOURCE OUTPUT GROUP STAMP` (settings from `REKEY_*`);
it writes the wall-clock time of its first consumed record to STAMP, and stops cleanly on SIGTERM (flush, commit).
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.kafka.producers import make_producer, produce_waiting
from kafka_rekey.services.settings import ServiceSettings
from kafka_rekey.shared.routing import route_in
from kafka_rekey.shared.translation import DomainEventDraft, SourceRecord, compiled

FEEDS_FROM = "genesys.conversations.raw"


def run(source: str, output: str, group: str, stamp: Path) -> None:
    settings = ServiceSettings()
    catalog = load_catalog(settings.catalog_path)
    like = next(s for s in catalog.sources if s.name == FEEDS_FROM)
    translate = compiled(like.translation)
    tables = [catalog.family_table(family) for family in like.feeds]
    consumer = Consumer({**settings.kafka.librdkafka(), "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.offset.store": True, "enable.auto.commit": True})
    producer = make_producer(settings.kafka, **{"linger.ms": 50, "batch.size": 262_144,
                                                "queue.buffering.max.messages": 500_000})
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    consumer.subscribe([source])
    first = True
    try:
        while not stopping:
            messages = consumer.consume(1000, 0.1)
            if messages and first:
                stamp.write_text(repr(time.time()))
                first = False
            for message in messages:
                if message.error() is not None:
                    continue
                record = SourceRecord(topic=message.topic(), partition=message.partition(), offset=message.offset(),
                                      key=message.key(), value=message.value())
                outcome = translate(record)
                if not isinstance(outcome, DomainEventDraft):
                    continue
                for table in tables:
                    target = route_in(table, catalog.version, outcome.org_id, outcome.interaction_id)
                    produce_waiting(producer, output, message.value(), target.key.encode())
            producer.poll(0)
    finally:
        producer.flush(60)
        if not first:
            consumer.commit(asynchronous=False)
        consumer.close()


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))

"""A replay end to end: the org's scope from the catalog, the scan, the order, the output, and what it read."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka_rekey.services.kafka.reading import message_headers
from kafka_rekey.services.replay.output import write_file, write_topic
from kafka_rekey.services.replay.reading import scan
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.replay import in_sequence_order, org_scope, sequence_of


@dataclass
class ReplayReport:
    family: str
    org_id: str
    topic: str
    why: str
    partitions_read: list[int]
    topic_partitions: int
    family_partitions: int
    records_scanned: int
    records_matched: int
    keys: int
    seconds: float
    written_to: str


def replay(catalog: Catalog, kafka: KafkaSettings, registry: RegistrySettings, family: str, org_id: str,
           since_ms: int | None, until_ms: int | None, to_topic: str | None, to_file: Path | None,
           on_range: Callable[[int], None] | None = None,
           progress: Callable[[int], None] | None = None) -> ReplayReport:
    started = time.monotonic()
    scope = org_scope(catalog, family, org_id)
    found = scan(kafka.librdkafka(), scope, since_ms, until_ms, on_range, progress)
    ordered = in_sequence_order(
        (message.key() or b"", sequence_of(message_headers(message), f"{scope.topic}/{message.partition()}/"
                                                              f"{message.offset()}"), message)
        for message in found.matched)
    if to_file is not None:
        write_file(to_file, ordered, catalog.topic(scope.topic).schema_subject, registry)
        written = str(to_file)
    else:
        assert to_topic is not None
        write_topic(kafka, to_topic, ordered)
        written = to_topic
    return ReplayReport(family, org_id, scope.topic, scope.why, list(scope.partitions), scope.topic_partitions,
                        scope.family_partitions, found.scanned, len(ordered),
                        len({message.key() for message in ordered}), round(time.monotonic() - started, 3), written)

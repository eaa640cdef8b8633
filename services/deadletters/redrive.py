"""`rekey deadletters redrive`: each selected dead letter through the current catalog's translation (as `rekey
translate` runs it), those that translate now re-sent to their source topic, the redrive memory told, the rest
reported with the reason they have now."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from kafka_rekey.services.deadletters.memory import redriven_positions, remember
from kafka_rekey.services.deadletters.reading import DeadLetterReader
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.pipeline import Processed
from kafka_rekey.shared.redrive import (
    AlreadyRedriven,
    DeadLetterRecord,
    Resend,
    Selection,
    StillDead,
    decide,
    memory_value,
)
from kafka_rekey.shared.translation import SourceRecord


@dataclasses.dataclass
class RedriveReport:
    dry_run: bool
    selected: int = 0
    resent: int = 0
    already_redriven: int = 0
    left: int = 0
    left_by_reason: dict[str, int] = dataclasses.field(default_factory=dict)
    unreadable: list[str] = dataclasses.field(default_factory=list)
    left_records: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def redrive(catalog: Catalog, kafka: KafkaSettings, selection: Selection, dry_run: bool,
            progress: Callable[[int], None] | None = None) -> RedriveReport:
    """Redrive the dead letters `selection` takes; `dry_run` decides without sending or remembering anything."""
    memory_topic = catalog.redrive_topic
    if memory_topic is None:
        raise ValueError("the catalog declares no topic with role 'redrive' (the redrive memory): add one, "
                         "compacted, and run `rekey topics apply`")
    config = kafka.librdkafka()
    already = redriven_positions(config, memory_topic)
    translate = _translator(catalog)
    report = RedriveReport(dry_run)
    left: Counter[str] = Counter()
    resends: list[tuple[DeadLetterRecord, Resend]] = []
    reader = DeadLetterReader(config, catalog.dlq_topic, progress)
    for letter in reader:
        if not selection.matches(letter):
            continue
        report.selected += 1
        verdict = decide(letter, None if letter.position in already else translate(letter))
        if isinstance(verdict, Resend):
            resends.append((letter, verdict))
        elif isinstance(verdict, AlreadyRedriven):
            report.already_redriven += 1
        else:
            left[verdict.reason] += 1
            report.left_records.append({
                "position": letter.position, "source": letter.source_position, "was": letter.reason,
                "reason": verdict.reason, "field": verdict.field if isinstance(verdict, StillDead) else None,
                "message": verdict.message})
    report.unreadable = reader.unreadable
    report.left, report.left_by_reason = sum(left.values()), dict(sorted(left.items()))
    report.resent = len(resends)
    if resends and not dry_run:
        _send(kafka, memory_topic, resends)
    return report


def _translator(catalog: Catalog) -> Callable[[DeadLetterRecord], Processed]:
    """The current translation of a dead letter's source record, one processor per source of the catalog."""
    from importlib.metadata import version

    from kafka_rekey.services import DISTRIBUTION
    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.services.settings import RegistrySettings
    from kafka_rekey.shared.pipeline import DeadLetter, RecordPipeline
    from kafka_rekey.shared.translation import AvroValues, PoisonPill, PoisonReason, RememberedRows

    registry = SchemaRegistryClient(RegistrySettings())  # asked only for an Avro record's writer schema
    pipeline = RecordPipeline(catalog, "rekey-redrive", version(DISTRIBUTION), encode=False,
                              avro=AvroValues(registry.writer_schema_text))
    rows = RememberedRows()
    processors = {source.name: pipeline.processor(source.translation, source.feeds, rows)
                  for source in catalog.sources}

    def translate(letter: DeadLetterRecord) -> Processed:
        record = SourceRecord(letter.source_topic, letter.source_partition, letter.source_offset, letter.key,
                              letter.value, dict(letter.original_headers), letter.timestamp_ms)
        process = processors.get(letter.source_topic)
        if process is None:
            pill = PoisonPill(PoisonReason.UNROUTABLE, f"{letter.source_topic} is not a source of the catalog")
            return DeadLetter(pill, catalog.dlq_topic, letter.key, letter.value, [])
        return process(record)

    return translate


def _send(kafka: KafkaSettings, memory_topic: str, resends: list[tuple[DeadLetterRecord, Resend]]) -> None:
    """Re-send, wait for every delivery, then remember: a dead letter is remembered only once re-sent."""
    from kafka_rekey.services.kafka.producers import make_producer

    producer = make_producer(kafka)
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for _letter, resend in resends:
        producer.produce(resend.topic, resend.value, resend.key, partition=resend.partition,
                         headers=list(resend.headers), timestamp=resend.timestamp_ms, on_delivery=delivered)
        producer.poll(0)
    left = producer.flush(60)
    if left or failures:
        raise RuntimeError(f"redrive: {left} re-sent records undelivered after 60 s" if left
                           else f"redrive: a re-sent record was refused: {failures[0]}")
    now = int(time.time() * 1000)
    remember(producer, memory_topic, ((letter.position, memory_value(letter, now)) for letter, _ in resends))

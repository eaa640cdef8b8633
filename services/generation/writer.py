"""`generate_to_topic`: send generated traffic to a Kafka topic and write its manifest from delivery reports.

Records go through `make_producer` (murmur2_random, so keyed records land where Java's would; null keys are
spread randomly because sticky partitioning is switched off) with large batches and lingering for speed.
Each manifest line is written when the broker acknowledges its record, with the partition and offset it got.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

from confluent_kafka import KafkaError, KafkaException, Message

from kafka_rekey.services.kafka.producers import make_producer, produce_waiting
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.generation import GenerationConfig, PlannedRecord, RecordKind, generate
from kafka_rekey.shared.translation import SourceFormat

THROUGHPUT_CONFIG: dict[str, Any] = {
    "linger.ms": 50,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "sticky.partitioning.linger.ms": 0,
}
POLL_EVERY = 1_000
PROGRESS_EVERY = 10_000
TOPIC_WAIT_SECONDS = 10.0
"""A topic created a moment ago reaches each broker's metadata on its own time: the broker asked may not know it yet."""


class GenerationError(RuntimeError):
    """The topic is missing, or records could not be delivered: the manifest is incomplete."""


@dataclass(frozen=True)
class GenerationSummary:
    topic: str
    records: int
    """Records written in total (= the manifest's line count)."""
    events: int
    """First deliveries of valid events."""
    duplicates: int
    malformed: dict[str, int]
    """Malformed records by PoisonReason value."""
    tombstones: int
    late: int
    orgs: int
    """Distinct orgs with at least one event."""
    interactions: int
    partitions: dict[int, int]
    """Records per partition."""
    seconds: float
    manifest_path: Path | None = None

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


def generate_to_topic(
    bootstrap: str | KafkaSettings,
    topic: str,
    events: int,
    orgs: int,
    *,
    zipf: float = 1.1,
    hot_orgs: tuple[str, ...] | list[str] = (),
    malformed_rate: float = 0.0,
    duplicate_rate: float = 0.0,
    late_rate: float = 0.02,
    source_format: SourceFormat | str = SourceFormat.CCAAS_JSON,
    seed: int = 0,
    manifest_path: Path | None = None,
    progress: Callable[[int], None] | None = None,
    flush_timeout: float = 120.0,
) -> GenerationSummary:
    """Write `events` generated source records to `topic` (which must exist) and return what was sent."""
    config = GenerationConfig(
        events=events, orgs=orgs, zipf=zipf, hot_orgs=tuple(hot_orgs), malformed_rate=malformed_rate,
        duplicate_rate=duplicate_rate, late_rate=late_rate, source_format=SourceFormat(source_format), seed=seed,
    )
    settings = bootstrap if isinstance(bootstrap, KafkaSettings) else KafkaSettings(bootstrap_servers=bootstrap)
    if manifest_path is not None:
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
    producer = make_producer(settings, **THROUGHPUT_CONFIG)
    started = time.monotonic()
    try:
        _require_topic(producer, settings.bootstrap_servers, topic)
        opened = manifest_path.open("w", encoding="utf-8", buffering=1 << 20) if manifest_path else None
        with opened if opened is not None else contextlib.nullcontext() as manifest:
            tally = _Tally(manifest)
            _send(producer, topic, config, tally, progress)
            undelivered = producer.flush(flush_timeout)
    finally:
        producer.purge()  # nothing is left after a clean run; after a failure, do not linger sending
        producer.close()
    if progress is not None:
        progress(events)
    if undelivered:
        raise GenerationError(f"{undelivered} of {events} records to {topic!r} were still undelivered after "
                              f"{flush_timeout:.0f}s (broker {settings.bootstrap_servers} slow or down?)")
    if tally.failures:
        index, error = tally.failures[0]
        raise GenerationError(f"{len(tally.failures)} of {events} records to {topic!r} failed; the first (record "
                              f"{index}): {error}")
    return tally.summary(topic, time.monotonic() - started, manifest_path)


def _send(producer: Any, topic: str, config: GenerationConfig, tally: _Tally,
          progress: Callable[[int], None] | None) -> None:
    for record in generate(config):
        report = partial(tally.delivered, record)
        produce_waiting(producer, topic, record.value, record.key, on_delivery=report)
        sent = record.index + 1
        if sent % POLL_EVERY == 0:
            producer.poll(0)
            if progress is not None and sent % PROGRESS_EVERY == 0:
                progress(sent)


def _require_topic(producer: Any, bootstrap: str, topic: str, wait: float = TOPIC_WAIT_SECONDS) -> None:
    deadline = time.monotonic() + wait
    while True:
        try:
            metadata = producer.list_topics(topic, timeout=15).topics.get(topic)
        except KafkaException as error:
            raise GenerationError(f"cannot read metadata of topic {topic!r} from {bootstrap}: {error}") from error
        if metadata is not None and metadata.error is None:
            return
        if time.monotonic() > deadline:
            reason = metadata.error if metadata is not None else "no metadata"
            raise GenerationError(f"topic {topic!r} is not available on {bootstrap} ({reason}): create it first")
        time.sleep(0.2)


class _Tally:
    def __init__(self, manifest: IO[str] | None) -> None:
        self.manifest = manifest
        self.kinds: Counter[str] = Counter()
        self.malformed: Counter[str] = Counter()
        self.late = 0
        self.orgs: set[str] = set()
        self.interactions: set[str] = set()
        self.partitions: Counter[int] = Counter()
        self.failures: list[tuple[int, KafkaError | str]] = []

    def delivered(self, record: PlannedRecord, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.failures.append((record.index, error))
            return
        partition, offset = message.partition(), message.offset()
        if partition is None or offset is None:
            self.failures.append((record.index, f"delivery report without partition/offset: {message}"))
            return
        self.partitions[partition] += 1
        if self.manifest is not None:
            self.manifest.write(record.manifest_line(partition, offset))
        self._count(record)

    def _count(self, record: PlannedRecord) -> None:
        self.kinds[record.kind] += 1
        self.late += record.late
        if record.kind is RecordKind.EVENT:
            self.orgs.add(record.org_id or "")
            self.interactions.add(record.interaction_id or "")
        elif record.kind is RecordKind.MALFORMED:
            self.malformed[record.malformed_reason or "?"] += 1

    def summary(self, topic: str, seconds: float, manifest_path: Path | None) -> GenerationSummary:
        return GenerationSummary(
            topic=topic,
            records=sum(self.kinds.values()),
            events=self.kinds[RecordKind.EVENT],
            duplicates=self.kinds[RecordKind.DUPLICATE],
            malformed=dict(self.malformed),
            tombstones=self.kinds[RecordKind.TOMBSTONE],
            late=self.late,
            orgs=len(self.orgs),
            interactions=len(self.interactions),
            partitions=dict(sorted(self.partitions.items())),
            seconds=seconds,
            manifest_path=manifest_path,
        )

"""The sink service: consume a domain topic and apply it to a table, committing offsets only after the database.

Loop: consume up to `batch_size` records -> decode (unusable records are kept in the rejected table) -> the
optional reorder buffer -> `plan_batch` (version guard, watermark, duplicates) -> one database transaction ->
commit, per partition, the offset of the first record not yet settled in the database. A crash anywhere
before the database commit redelivers the batch; the sink is idempotent, so nothing is lost or doubled.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from prometheus_client import REGISTRY

from kafka_rekey.services.observability.http import HealthServer
from kafka_rekey.services.observability.logs import configure_logging
from kafka_rekey.services.runtime.metrics import CONSUMED, GAUGES_EVERY, export_consumer_lag
from kafka_rekey.services.sink.databases import open_store
from kafka_rekey.services.sink.metrics import SinkMetrics
from kafka_rekey.services.sink.settings import SinkSettings
from kafka_rekey.services.sink.store import Rejected, SinkStore, SinkStoreError
from kafka_rekey.shared.sink.events import SinkEvent, event_from_record
from kafka_rekey.shared.sink.offsets import OffsetTracker
from kafka_rekey.shared.sink.plan import BatchPlan, plan_batch
from kafka_rekey.shared.sink.reorder import Release, ReorderBuffer
from kafka_rekey.shared.sink.watermark import Watermark

SERVICE = "sink"
Decode = Callable[[bytes], Mapping[str, Any]]
LIVENESS_S = 120.0


@dataclass(frozen=True, slots=True)
class Delivered:
    """A decoded event and where it was read from the domain topic."""

    partition: int
    offset: int
    event: SinkEvent


def consumer_config(settings: SinkSettings, **overrides: Any) -> dict[str, Any]:
    return {
        **settings.kafka.librdkafka(),
        "group.id": settings.sink.consumer_group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": settings.sink.session_timeout_ms,
        **overrides,
    }


class Sink:
    """One sink consumer. `step()` handles one batch; `run(stop)` loops until `stop` is set, then closes."""

    def __init__(self, settings: SinkSettings, store: SinkStore, decode: Decode, metrics: SinkMetrics | None = None,
                 consumer_overrides: Mapping[str, Any] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.options = settings.sink
        self.topic = settings.require_topic()
        self.store = store
        self.decode = decode
        self.metrics = metrics or SinkMetrics(store.table)
        self.clock = clock
        self.log = structlog.get_logger().bind(service=SERVICE, topic=self.topic, table=store.table)
        self.tracker = OffsetTracker()
        self.buffer: ReorderBuffer[Delivered] | None = (
            ReorderBuffer(self.options.reorder_max_held, self.options.reorder_timeout_s)
            if self.options.reorder_enabled else None
        )
        store.ensure_schema()
        delta = int(self.options.watermark_delta_s * 1000) if self.options.watermark_enabled else None
        self.watermark = Watermark(delta, store.load_watermark())
        self.joined = False
        self.last_step = self.next_gauges = clock()
        self.consumer = Consumer(consumer_config(settings, **(consumer_overrides or {})))
        self.consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_lost)

    # -- probes --------------------------------------------------------------------------------------
    def live(self) -> bool:
        return self.clock() - self.last_step < LIVENESS_S

    def ready(self) -> bool:
        return self.joined and self.live()

    # -- the loop ------------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        self.log.info("sink started", group=self.options.consumer_group, reorder=self.buffer is not None,
                      watermark_delta_ms=self.watermark.delta_ms)
        try:
            while not stop.is_set():
                self.step()
        finally:
            self.close()

    def step(self) -> int:
        """Consume and settle one batch; return how many records were consumed."""
        messages = self.consumer.consume(self.options.batch_size, self.options.batch_timeout_s)
        delivered: list[Delivered] = []
        rejected: list[Rejected] = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.fatal():
                    raise KafkaException(error)
                if error.code() != KafkaError._PARTITION_EOF:
                    self.log.warning("consumer error", error=str(error))
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:  # only error events lack a position
                continue
            self.tracker.consumed(partition, offset)
            outcome = self._decode(message, partition, offset)
            if isinstance(outcome, Rejected):
                rejected.append(outcome)
            else:
                delivered.append(outcome)
        if delivered or rejected:
            CONSUMED.labels(SERVICE, self.topic).inc(len(delivered) + len(rejected))
        released = self._reorder(delivered)
        if released or rejected:
            self._settle(released, rejected)
        self._commit()
        self.last_step = self.clock()
        if self.last_step >= self.next_gauges:
            export_consumer_lag(self.consumer, SERVICE)
            self.next_gauges = self.last_step + GAUGES_EVERY
        return len(messages)

    def _decode(self, message: Message, partition: int, offset: int) -> Delivered | Rejected:
        try:
            key = message.key()
            value = message.value()
            if value is None:
                raise ValueError("the record has no value (a tombstone): domain topics carry events only")
            return Delivered(partition, offset, event_from_record(self.decode(value), key.decode() if key else ""))
        except ValueError as error:  # undecodable bytes, schema mismatch, unusable field (not the registry)
            self.log.warning("record rejected", partition=partition, offset=offset, error=str(error))
            return Rejected(self.topic, partition, offset, message.key(), message.value(), str(error))

    def _reorder(self, delivered: Sequence[Delivered]) -> list[Delivered]:
        buffer = self.buffer
        if buffer is None:
            return list(delivered)
        unknown = {d.event.output_key for d in delivered if not buffer.knows(d.event.output_key)}
        if unknown:
            last = self.store.last_sequences(unknown)
            for key in unknown:
                buffer.learn(key, last.get(key, 0))
        now = self.clock()
        released: list[Delivered] = []
        for item in delivered:
            self._released(buffer.offer(item.event.output_key, item.event.sequence, item, now), released)
        self._released(buffer.expire(now), released)
        self.metrics.held.set(buffer.held_count)
        return released

    def _released(self, release: Release[Delivered], into: list[Delivered]) -> None:
        into.extend(release.items)
        for gap in release.gaps:
            self.metrics.gap(gap)
            self.log.warning("sequence gap released", key=gap.key, missing_from=gap.expected,
                             missing_to=gap.released - 1, reason=gap.reason.value, waited_s=round(gap.waited_s, 3))

    def _settle(self, released: Sequence[Delivered], rejected: Sequence[Rejected]) -> None:
        started = time.perf_counter()
        events = [d.event for d in released]
        plan = self._apply_with_retries(events, rejected)
        self.watermark = plan.watermark
        self.metrics.record(plan)
        self.metrics.rejected.inc(len(rejected))
        self.metrics.batch_seconds.observe(time.perf_counter() - started)
        for correction in plan.corrections:
            self.log.info("event sent to corrections", key=correction.event.output_key,
                          sequence=correction.event.sequence, event_time=correction.event.event_time,
                          reason=correction.reason.value, watermark=correction.watermark)
        for item in released:
            self.tracker.settled(item.partition, item.offset)
        for record in rejected:
            self.tracker.settled(record.partition, record.offset)

    def _apply_with_retries(self, events: Sequence[SinkEvent], rejected: Sequence[Rejected]) -> BatchPlan:
        attempts = self.options.db_attempts
        for attempt in range(1, attempts + 1):
            try:
                plan = plan_batch(events, self.store.stored(events), self.watermark)
                self.store.apply(plan, rejected)
                return plan
            except SinkStoreError as error:
                if attempt == attempts:
                    self.log.error("batch not applied; stopping without committing its offsets", error=str(error))
                    raise
                self.log.warning("batch not applied; retrying", attempt=attempt, error=str(error))
                time.sleep(min(0.5 * 2 ** attempt, 5.0))
        raise AssertionError("unreachable")

    def _commit(self) -> None:
        positions = self.tracker.positions()
        if not positions:
            return
        try:
            self.consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in positions.items()],
                                 asynchronous=False)
        except KafkaException as error:  # e.g. a rebalance is under way: the records come again, harmlessly
            self.log.warning("offset commit failed; the records will be redelivered", error=str(error))
            return
        self.tracker.mark_committed(positions)

    # -- rebalances ----------------------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.joined = True
        self.log.info("partitions assigned", partitions=sorted(tp.partition for tp in partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._commit()
        self._forget(partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._forget(partitions)

    def _forget(self, partitions: list[TopicPartition]) -> None:
        """Drop what was held for these partitions: their next owner resumes from the committed offsets."""
        gone = {tp.partition for tp in partitions}
        self.tracker.forget(gone)
        if self.buffer is not None:
            dropped = self.buffer.drop(lambda item: item.partition in gone)
            self.buffer.forget_keys()
            self.metrics.held.set(self.buffer.held_count)
            if dropped:
                self.log.info("held events dropped on revoke; they will be redelivered", count=dropped)
        self.log.info("partitions revoked", partitions=sorted(gone))

    def close(self) -> None:
        """Commit what is settled, leave the group and close the store."""
        try:
            self._commit()
            self.consumer.close()
        finally:
            self.store.close()
        self.log.info("sink stopped")


def domain_decoder(settings: SinkSettings) -> Decode:
    """Avro (Confluent wire format) decoding of the topic's values through the schema registry."""
    from kafka_rekey.services.catalog_files import load_catalog
    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.services.registry.serde import AvroSerde
    from kafka_rekey.shared.avro import load_schema

    topic = settings.require_topic()
    subject = settings.sink.subject
    if subject is None:
        try:
            subject = load_catalog(settings.catalog_path).topic(topic).schema_subject
        except (FileNotFoundError, KeyError):
            subject = f"{topic}-value"
    serde = AvroSerde(SchemaRegistryClient(settings.registry), subject, load_schema("interaction_event"))
    return serde.decode


def run_sink(settings: SinkSettings | None = None) -> None:
    """Run the sink until SIGTERM/SIGINT, serving /healthz, /readyz and /metrics on `settings.web_port`."""
    settings = settings or SinkSettings()
    configure_logging(SERVICE, settings.log_level, settings.log_format)
    store = open_store(settings.database_url, settings.sink.table)
    metrics = SinkMetrics(store.table, REGISTRY)  # beside the process's own metrics and its consumer lag
    sink = Sink(settings, store, domain_decoder(settings), metrics)
    http = HealthServer(settings.web_port, metrics.registry, ready=sink.ready, live=sink.live).start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        sink.run(stop)
    finally:
        http.stop()

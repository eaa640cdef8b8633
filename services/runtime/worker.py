"""The runtime's worker: one consumer, one producer, a batch loop, checkpoints and rebalances.

Each loop consumes up to `batch_size` records, hands each processor its records in one call, and checkpoints
every `checkpoint_interval_ms`, on revocation and on SIGTERM (see `Checkpoint`). Keyed outputs are placed by
librdkafka's `murmur2_random` partitioner (Java parity) or the explicit partition a processor gives; success
deliveries raise no Python callback, a failed one blocks the next commit.

Assignment is incremental (librdkafka's `cooperative-sticky`, unless `assignment_strategy` says otherwise): a
rebalance revokes only the partitions that move, with a final checkpoint of everything processed so far, and the
worker goes on with the rest; a failed final checkpoint rewinds the partitions it keeps once the callback returned.
"""

from __future__ import annotations

import gc
import logging
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.observability.http import HealthServer
from kafka_rekey.services.runtime.batching import next_request
from kafka_rekey.services.runtime.checkpoint import Checkpoint
from kafka_rekey.services.runtime.failures import CheckpointFailed, ProducerStuck
from kafka_rekey.services.runtime.metrics import (
    CHECKPOINT_FAILURES,
    CHECKPOINT_SECONDS,
    CONSUMED,
    GAUGES_EVERY,
    PRODUCED,
    export_consumer_lag,
)
from kafka_rekey.services.runtime.output_producer import MakeProducer, OutputProducer
from kafka_rekey.services.runtime.phases import Phase
from kafka_rekey.services.runtime.processor import Processor, TableSpec
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.services.runtime.state import (
    RESTORE_PROGRESS,
    MemoryStore,
    RocksStore,
    Store,
    Table,
    changelog_ends,
    restore_tables,
    rocks_options,
)
from kafka_rekey.services.runtime.topics import InternalTopic, ensure_topics
from kafka_rekey.shared.liveness import LivenessLimits, unhealthy_reason

log = structlog.get_logger()

PATIENCE = 120.0
T = TypeVar("T")
Output = tuple[str, bytes | None, bytes | None, int, list[tuple[str, bytes]] | None]
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# A batch keeps tens of thousands of young objects alive (records, outputs, pending state): at CPython's default
# threshold the collector rescans them many times per batch (docs/BENCHMARKS.md). Our objects are freed by
# reference counting; the collector only needs to run now and then.
GC_THRESHOLDS = (100_000, 20, 100)
PERSIST_SHARE = 0.5
"""A committed checkpoint's changes are written to the local stores over this share of the checkpoint interval."""
SLOW_LOOP = 0.25
"""A loop iteration (after its fetch) longer than this is logged: a full batch takes well under it."""
HELD_BATCHES = 4
"""Outputs held while a checkpoint drains, in batches' worth of records, before the loop waits for it."""


@dataclass(frozen=True)
class KafkaClients:
    """How the worker makes its clients: confluent-kafka's, or fakes of the same calls in a unit test."""

    consumer: Callable[[dict[str, Any]], Consumer] = Consumer
    producer: MakeProducer = Producer
    admin: Callable[[dict[str, Any]], AdminClient] = AdminClient


class Worker:
    def __init__(self, settings: RuntimeSettings, group_id: str, service: str, processors: Sequence[Processor],
                 internal_topics: Sequence[InternalTopic] = (), unmetered: frozenset[str] = frozenset(),
                 role: str = "", clients: KafkaClients = KafkaClients()) -> None:
        """`unmetered`: output topics left out of `rekey_produced_total` besides the internal ones (e.g. the DLQ,
        which its own metric counts): that metric counts the service's results. `role`: what this worker runs when
        its group has workers of several kinds (one ACL stage each), part of its transactional.id: workers of two
        roles that share a worker id (one data directory, one `REKEY_WORKER_ID`) must not fence each other."""
        self.settings = settings
        self.group_id = group_id
        self.service = service
        self.processors = list(processors)
        self.by_topic = {topic: p for p in self.processors for topic in p.topics}
        self.table_specs = [spec for p in self.processors for spec in p.tables]
        self.internal_topics = list(internal_topics)
        self.partition_counts: dict[str, int] = {}
        """Of the internal topics and changelogs, as the cluster has them (known once `run` ensured them)."""
        self.unmetered = unmetered | {topic.name for topic in internal_topics}
        self.state_dir = settings.data_dir / group_id
        self.tables: dict[tuple[str, int], Table] = {}
        self.rocks_options = rocks_options(settings.state_memory_mb) if settings.state_store == "rocksdb" else None
        self.staged: list[Output] = []
        self.held: list[Output] = []
        """Outputs of batches processed while a checkpoint drains: produced once it has committed."""
        self.checkpoint_failures = 0
        """Checkpoint steps that failed so far (their uncommitted work dropped)."""
        self.hold_limit = HELD_BATCHES * settings.batch_size
        self.request = settings.batch_size
        """Records the next `consume` asks for (`next_request`)."""
        self.stall_limit = (settings.session_timeout_ms - 1_000) / 1000
        self.running = True
        self.restoring = False
        self.assigned: set[tuple[str, int]] = set()
        self.last_loop = time.monotonic()
        self.liveness = LivenessLimits(settings.liveness_s, settings.restore_stall_s)
        self.fetching = self.last_loop
        """When the current batch's fetch began, or its rebalance callbacks ended (a restore is not a stall)."""
        self.cooperative = settings.assignment_strategy == "cooperative-sticky"
        self.rebalances = 0
        """Rebalance callbacks served so far: a batch fetched across one may hold records of revoked partitions."""
        self.rewind_due = False
        """A final checkpoint of a partial revocation failed: the partitions kept are reread once it returned."""
        self.consumer = clients.consumer({**settings.consumer_config(group_id), "error_cb": self._kafka_error})
        self.reader = clients.consumer({**settings.consumer_config(f"{group_id}-restore"),
                                        "enable.partition.eof": True})
        self.watermarks = clients.consumer({**settings.consumer_config(f"{group_id}-restore"),
                                            "isolation.level": "read_uncommitted"})
        transactional_id = "-".join(filter(None, (group_id, role, self._worker_id()))) \
            if settings.exactly_once else None
        self.output = OutputProducer(settings.producer_config(transactional_id), clients.producer)
        self.admin = clients.admin(settings.kafka.librdkafka())
        self.checkpoint = Checkpoint(self.consumer, self.output, self.watermarks, self.tables,
                                     delivered=self._send_held,
                                     persist_within=settings.checkpoint_interval_ms / 1000 * PERSIST_SHARE)
        interval = settings.checkpoint_interval_ms / 1000
        self.next_checkpoint = self.next_gauges = time.monotonic() + interval

    # -- lifecycle ---------------------------------------------------------------------------------------
    def run(self) -> None:
        topics = self._ensure_topics()
        self.subscribe()
        health = HealthServer(self.settings.web_port, ready=self.ready, live=self.live).start()
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._stop)
        log.info("worker started", service=self.service, group=self.group_id, topics=topics,
                 guarantee=self.settings.processing_guarantee)
        gc.collect()
        gc.freeze()  # what start-up built (modules, catalog, schemas) lives as long as the process
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            while self.running:
                self.step()
            self._checkpoint(final=True)
        finally:
            self.close()
            health.stop()
        log.info("worker stopped", service=self.service)

    def subscribe(self) -> None:
        """Start the producer (fencing an earlier incarnation's transactions) and join the group."""
        self.output.start()
        self.consumer.subscribe(sorted(self.by_topic), on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._lost)

    def step(self) -> None:
        """One loop: a batch consumed (and the rebalance callbacks librdkafka serves meanwhile) and processed, the
        producer's reports served, the checkpoint under way moved on, and the next one taken when it is time."""
        self.fetching = time.monotonic()
        rebalances = self.rebalances
        messages = self._consume()
        fetched, records = time.monotonic(), len(messages)
        if self.rewind_due:
            self.rewind_due = False
            messages = []  # read before the rewind: reread from the committed offsets
            self._rewind()
        elif messages and rebalances != self.rebalances:
            messages = [m for m in messages if (m.topic(), m.partition()) in self.assigned]
        if messages:
            self._process(messages)
        del messages  # else the next batch is fetched while this one is still held: two batches in memory
        self.last_loop = now = time.monotonic()
        self._checkpoint_step(self._serve_producer_reports)
        self.checkpoint.persist_some()
        if self.checkpoint.phase is Phase.DRAINING and (self.checkpoint.drained()
                                                        or len(self.held) >= self.hold_limit):
            self._finish_drain()
        if self.checkpoint.offsets_committed():
            self._finish_commit()
        if now >= self.next_checkpoint and not self.checkpoint.committing_transaction:
            self._checkpoint()
            self.next_checkpoint = time.monotonic() + self.settings.checkpoint_interval_ms / 1000
        if now >= self.next_gauges:
            export_consumer_lag(self.consumer, self.service)
            self.next_gauges = now + GAUGES_EVERY
        ended = time.monotonic()
        if ended - fetched > SLOW_LOOP:
            self._log_slow_loop(fetched, now, ended, records)

    def close(self) -> None:
        self.consumer.close()  # revokes (a last checkpoint) and leaves the group at once
        self.output.close()
        self._close_tables(list(self.tables))

    @staticmethod
    def _log_slow_loop(fetched: float, processed: float, ended: float, records: int) -> None:
        """One loop that held its records' successors back for long: processing the batch, or what followed it
        (the producer's reports, store writes, a checkpoint). A slow checkpoint also logs its own phases;
        this names the rest (a slow second of latency with no slow checkpoint)."""
        log.warning("slow loop", seconds=round(ended - fetched, 3), records=records,
                    process=round(processed - fetched, 3), after_process=round(ended - processed, 3))

    def ready(self) -> bool | str:
        # From the rebalance callbacks, not `consumer.assignment()`: the probe runs on the HTTP thread, where a
        # call into librdkafka waits on its main thread (seconds during a rebalance) and fails once it is closed.
        return RESTORE_PROGRESS.describe() if self.restoring else bool(self.assigned)

    def live(self) -> bool | str:
        reason = unhealthy_reason(time.monotonic(), self.last_loop, self.restoring, RESTORE_PROGRESS.advanced_at,
                                  self.liveness)
        return True if reason is None else reason

    def _stop(self, signum: int, _frame: object) -> None:
        log.info("stopping: finishing the batch and checkpointing", signal=signal.Signals(signum).name)
        self.running = False

    # -- processing --------------------------------------------------------------------------------------
    def _consume(self) -> list[Message]:
        """Up to `request` records: what is already fetched at once, else the first to arrive within the poll
        timeout and what came with it. (`consume(n, timeout)` waits out the whole timeout unless n records come,
        which would add the timeout to every record's latency below saturation.)"""
        size = self.request
        messages = self.consumer.consume(size, 0)
        if messages:
            return messages
        messages = self.consumer.consume(1, self.settings.poll_timeout_ms / 1000)
        if messages and size > 1:
            messages += self.consumer.consume(size - 1, 0)
        return messages

    def produce(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
                headers: list[tuple[str, bytes]] | None = None) -> None:
        """Stage an output of the batch being processed; `_process` hands the batch's outputs to librdkafka."""
        self.staged.append((topic, value, key, -1 if partition is None else partition, headers))

    def _process(self, messages: list[Message]) -> None:
        self.checkpoint.begin()
        self.staged = []
        by_topic: dict[str, list[Message]] = {}
        last_offsets: dict[tuple[str, int], int] = {}
        for message in messages:
            error = message.error()
            if error is not None:
                log.warning("consumer error", topic=message.topic(), partition=message.partition(), error=str(error))
                continue
            topic = message.topic()
            by_topic.setdefault(topic, []).append(message)
            last_offsets[(topic, message.partition())] = message.offset()
        groups: dict[Processor, list[Message]] = {}
        for topic, batch in by_topic.items():
            groups.setdefault(self.by_topic[topic], []).extend(batch)
        started = time.monotonic()
        items = sum(processor.process(batch, self, self.table) for processor, batch in groups.items())
        processed = time.monotonic()
        self.request = next_request(self.settings.batch_size, sum(map(len, groups.values())), items,
                                    processed - started)
        stalled = processed - self.fetching
        if stalled > self.stall_limit:
            # Paused (SIGSTOP, a frozen VM) past the session timeout: the group may have given these partitions
            # to another worker, which numbers the same keys from the committed state. Writing this batch could
            # give one sequence to two events; dropping it and rewinding cannot.
            log.warning("worker stalled past the session timeout: dropping the batch, rewinding",
                        stalled_seconds=round(stalled, 1))
            self.staged = []
            self._rewind()
            return
        offsets = self.checkpoint.offsets
        for position, offset in last_offsets.items():
            offsets[position] = offset + 1
        self._send(self.staged)
        for topic, batch in by_topic.items():
            CONSUMED.labels(self.service, topic).inc(len(batch))

    def _send(self, outputs: list[Output]) -> None:
        """Hand outputs to librdkafka; while a checkpoint drains they are held: a record produced now would have
        to be delivered before that checkpoint's offsets could be committed."""
        if self.checkpoint.phase is Phase.DRAINING:
            self.held += outputs
            return
        client = self.output.client
        produce, produced = client.produce, Counter[str]()
        for topic, value, key, partition, headers in outputs:
            while True:
                try:
                    produce(topic, value, key, partition, headers=headers)
                    break
                except BufferError:
                    client.poll(0.05)  # the local queue is full: let librdkafka send
                except KafkaException as error:
                    # The open transaction failed (it takes nothing more until aborted), or the producer did:
                    # the rest of the batch is dropped, and the next checkpoint aborts and rewinds.
                    self.output.output_failed(f"{topic}: {error.args[0]}")
                    return
            produced[topic] += 1
        for topic, count in produced.items():
            if topic not in self.unmetered:
                PRODUCED.labels(self.service, topic).inc(count)

    def partitions(self, topic: str) -> int:
        return self.partition_counts[topic]

    def table(self, name: str, partition: int) -> Table:
        return self.tables[(name, partition)]

    def _checkpoint(self, final: bool = False) -> None:
        """Finish the checkpoint under way, then take the next; a final one (revocation, stop) waits for nothing on
        another thread: it commits the offsets still being committed itself (`fold_commit`)."""
        if self.checkpoint.phase is Phase.DRAINING and not self._finish_drain(final):
            return
        if self.checkpoint.phase is Phase.COMMITTING:
            if final and not self.checkpoint.offsets_committed():
                self.checkpoint.fold_commit()
            elif not self._finish_commit(final):
                return
        self._checkpoint_step(partial(self.checkpoint.commit, final), final)

    def _final_checkpoint(self) -> bool:
        """The last checkpoint of partitions being given up; False when it failed (their uncommitted work dropped)."""
        failures = self.checkpoint_failures
        self._checkpoint(final=True)
        return self.checkpoint_failures == failures

    def _finish_drain(self, final: bool = False) -> bool:
        """Finish the draining checkpoint (waiting for the producer if need be; once the outputs before it are
        delivered, the held ones are produced: `_send_held`); False when it failed (`_checkpoint_step`)."""
        return self._checkpoint_step(partial(self.checkpoint.finish_drain, final), final)

    def _finish_commit(self, final: bool = False) -> bool:
        """Finish the checkpoint whose offsets are being committed (waiting for the commit if need be); False when
        it was refused (`_checkpoint_step`)."""
        return self._checkpoint_step(self.checkpoint.finish_commit, final)

    def _serve_producer_reports(self) -> None:
        """The producer's delivery and error reports; a fatal error it raises here (fenced by a newer instance with
        its transactional.id) fails like a checkpoint step: the producer is replaced and the worker rewinds."""
        self.output.client.poll(0)

    def _send_held(self) -> None:
        held, self.held = self.held, []
        if held:
            self.checkpoint.begin()  # exactly-once: the transaction after the one just committed
        self._send(held)

    def _checkpoint_step(self, step: Callable[[], float | None], final: bool = False) -> bool:
        """Run a checkpoint step; when it fails, rewind to the committed offsets and return False. A failed final
        step only drops the uncommitted work: the partitions are being given up (their next owner, or this worker
        once they are assigned again, starts at the committed offsets), and inside a revocation the consumer
        cannot say where that is (its committed-offsets requests time out)."""
        try:
            seconds = step()
            if seconds is not None:
                CHECKPOINT_SECONDS.labels(self.service).observe(seconds)
            return True
        except CheckpointFailed as failure:
            log.error("checkpoint failed: dropping the uncommitted work", reason=str(failure), final=final)
            reason = "producer_stuck" if isinstance(failure, ProducerStuck) else "commit_failed"
        except KafkaException as error:
            if not error.args[0].fatal():
                raise
            log.error("producer failed for good: replacing it, dropping the uncommitted work",
                      error=str(error.args[0]), final=final)
            reason = "producer_fatal"
        CHECKPOINT_FAILURES.labels(self.service, reason).inc()
        self.checkpoint_failures += 1
        if final:
            self._abandon()
        else:
            self._rewind()
        return False

    def _rewind(self) -> None:
        """Forget uncommitted work (`_abandon`) and reread from the committed offsets."""
        self._abandon()
        assignment = self.consumer.assignment()
        if not assignment:
            return
        for tp in self._committed(assignment):
            offset = tp.offset if tp.offset >= 0 else -2  # OFFSET_BEGINNING: nothing committed yet
            try:
                self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
            except KafkaException as error:  # no longer ours: the coming rebalance settles where it starts
                log.warning("cannot rewind a partition", partition=f"{tp.topic}[{tp.partition}]",
                            error=str(error.args[0]))

    def _abandon(self, wait_for_commit: bool = True) -> None:
        """Drop pending state, processed offsets, held outputs and the open transaction (`Checkpoint.abandon`).

        A producer that can no longer abort (fenced, failed for good, or stuck in a call) is replaced: a new one
        with the same transactional.id fences whatever the old one left."""
        try:
            self.checkpoint.abandon(wait_for_commit)
        except (KafkaException, ProducerStuck) as error:
            log.error("producer unusable: replacing it", error=str(error.args[0]))
            self.output.replace()
            self.checkpoint.abandon(wait_for_commit)
            if isinstance(error, ProducerStuck):
                self._reload_state()
        self.held = []

    def _reload_state(self) -> None:
        """Rebuild the tables of the current assignment from their changelogs: a stuck transaction's outcome is
        unknown (its commit may have landed before the new producer fenced it), and the restore reads what was
        committed."""
        log.warning("reloading state from the changelogs: the stuck transaction may have committed")
        self._close_tables(list(self.tables))
        assignment = self.consumer.assignment()
        if assignment:
            self._restore(assignment)

    def _committed(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return self._patiently(lambda: list(self.consumer.committed(partitions, timeout=10)), "committed offsets")

    @staticmethod
    def _patiently(ask: Callable[[], T], what: str) -> T:
        """`ask()` again while the cluster cannot answer (a leader or coordinator moving), for a while."""
        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                return ask()
            except KafkaException as error:
                if time.monotonic() > deadline:
                    raise
                log.warning(f"{what} unavailable, asking again", error=str(error.args[0]))
                time.sleep(1)

    # -- rebalances --------------------------------------------------------------------------------------
    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Restore the new partitions' tables, then take them (only the new ones when incremental)."""
        self.rebalances += 1
        log.info("partitions assigned", partitions=_names(partitions))
        self._restore(partitions)
        if self.cooperative:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)

    def _restore(self, partitions: list[TopicPartition]) -> None:
        stateful = [tp for tp in partitions if any(spec.input_topic == tp.topic for spec in self.table_specs)]
        self.assigned |= {(tp.topic, tp.partition) for tp in partitions}
        if not stateful:
            return
        self.restoring = True
        RESTORE_PROGRESS.preparing()
        started = time.monotonic()
        try:
            committed = {(tp.topic, tp.partition): max(tp.offset, 0) for tp in self._committed(stateful)}
            tables = [(spec, tp) for tp in stateful for spec in self.table_specs if spec.input_topic == tp.topic]
            ends = self._patiently(lambda: changelog_ends(
                self.watermarks, [(spec.changelog, tp.partition) for spec, tp in tables]), "changelog ends")
            opened = {(spec.name, tp.partition): Table(spec.name, spec.changelog, tp.partition,
                                                       self._store(spec, tp.partition), spec.batched, spec.recent_keys)
                      for spec, tp in tables}
            applied = self._patiently(partial(restore_tables, self.reader, [
                (opened[(spec.name, tp.partition)], committed[(tp.topic, tp.partition)],
                 ends[(spec.changelog, tp.partition)]) for spec, tp in tables]), "changelog")
            self.tables.update(opened)
            log.info("state restored", partitions=_names(stateful), changelog_records=applied,
                     seconds=round(time.monotonic() - started, 2))
        finally:
            self.restoring = False
            self.fetching = self.last_loop = time.monotonic()  # the loop resumes now

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """A final checkpoint of everything processed (the transaction spans every partition), then the revoked
        partitions are given up; the kept ones, if it failed, are reread once the callback returned."""
        self.rebalances += 1
        log.info("partitions revoked: checkpointing", partitions=_names(partitions))
        committed = self._final_checkpoint()
        self._release(partitions)
        self.rewind_due = self.rewind_due or (not committed and bool(self.assigned))
        self._unassign(consumer, partitions)
        self.fetching = time.monotonic()

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.rebalances += 1
        log.warning("partitions lost (this worker was fenced out of its group): dropping uncommitted work",
                    partitions=_names(partitions))
        self._abandon(wait_for_commit=False)  # a commit of this fenced member may be answered only after this call
        self._release(partitions)
        self.rewind_due = self.rewind_due or bool(self.assigned)
        self._unassign(consumer, partitions)

    def _unassign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.cooperative:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def _release(self, partitions: list[TopicPartition]) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self.assigned -= gone
        for key in gone:
            self.checkpoint.offsets.pop(key, None)
        self._close_tables([(spec.name, p) for spec in self.table_specs for t, p in gone if t == spec.input_topic])

    def _close_tables(self, keys: list[tuple[str, int]]) -> None:
        for key in keys:
            table = self.tables.pop(key, None)
            if table is not None:
                table.close()

    def _store(self, spec: TableSpec, partition: int) -> Store:
        if self.settings.state_store == "memory":
            return MemoryStore()
        return RocksStore(self.state_dir / spec.name / str(partition), self.rocks_options)

    # -- plumbing ----------------------------------------------------------------------------------------
    def _ensure_topics(self) -> list[str]:
        """The internal topics, then the changelogs: a table is kept per partition of its input topic, so its
        changelog has as many partitions as that topic."""
        self.partition_counts = ensure_topics(self.admin, self.internal_topics)
        inputs = self._wait_until_known(sorted(self.by_topic))
        partitions = {**inputs, **self.partition_counts}
        self.partition_counts |= ensure_topics(self.admin, [
            InternalTopic(spec.changelog, partitions.get(spec.input_topic, self.settings.internal_partitions),
                          self.settings.internal_replication_factor, spec.changelog_config)
            for spec in self.table_specs], grow=True)
        return sorted(self.by_topic)

    def _wait_until_known(self, topics: list[str], timeout: float = 30.0) -> dict[str, int]:
        """Until the consumer's own metadata has every input topic (one it does not know yet would be left out of
        the first assignment); the partition counts of those it knows."""
        deadline = time.monotonic() + timeout
        while True:
            known = self.consumer.list_topics(timeout=10).topics
            missing = [t for t in topics if t not in known or known[t].error is not None or not known[t].partitions]
            if not missing or time.monotonic() > deadline:
                if missing:
                    log.warning("input topics still unknown to the consumer; they join at a metadata refresh",
                                topics=missing)
                return {t: len(known[t].partitions) for t in topics if t not in missing}
            time.sleep(0.2)

    def _worker_id(self) -> str:
        if self.settings.worker_id:
            return self.settings.worker_id
        path: Path = self.state_dir / "worker-id"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(uuid.uuid4().hex[:12])
        return path.read_text().strip()

    @staticmethod
    def _kafka_error(error: KafkaError) -> None:
        """librdkafka's own errors: mostly transient (it retries); a fatal one surfaces at the next checkpoint."""
        log.log(logging.ERROR if error.fatal() else logging.WARNING, "kafka error", error=str(error))


def _names(partitions: list[TopicPartition]) -> list[str]:
    return [f"{tp.topic}[{tp.partition}]" for tp in partitions]


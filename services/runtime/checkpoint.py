"""A checkpoint makes processed input, its outputs and its state changes durable together, in this order:

at-least-once: produce the changelog records of the changed keys; wait until the producer has delivered every
output and changelog record, with no delivery error; commit the consumed offsets; persist the local stores. The
loop does not stop for the wait: it goes on processing while the checkpoint drains and holds the new outputs back
(one produced now would have to be delivered first), then produces them once the ones before are delivered. Nor
for the offset commit, a round trip to the group coordinator: a helper thread makes it (`_OffsetCommit`), and the
stores are written once it succeeded (`finish_commit`). A final checkpoint (revocation, stop) waits for the
producer at once, and commits offsets still left to the helper itself (`fold_commit`).
exactly-once: produce the changelog records in the open transaction; add the consumed offsets to it
(`send_offsets_to_transaction`, fenced by the group generation); commit it; persist the local stores.

Persisting does not stop the loop either: the committed changes are written to the local stores between batches,
at an even pace over `persist_within` seconds (`persist_some`; they stay readable until then), and the next
checkpoint, a rewind or a close writes what is left first. A final checkpoint writes them at once. The stores only
spare a restore the changelog's replay, so a crash before they are written costs a longer restore, nothing else.

Whatever fails before the offsets are committed raises `CheckpointFailed`, and the worker rewinds to the
committed offsets and drops the pending state (`abandon`): a retry then redoes exactly the uncommitted work.

librdkafka does not always keep the timeout a transactional call is given: `send_offsets_to_transaction` waits
for ever once the group coordinator it cached is gone for good (a broker killed; confluentinc/librdkafka#5456 and
#5511, open in 2.16). Each transactional call of a checkpoint therefore runs under a deadline of our own; a call
that outlives it leaves its producer unusable (`ProducerStuck`), and the worker replaces the producer, which fences
the stuck one's transaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from services.kafka.producers import produce_waiting
from services.runtime.state import Table, changelog_ends

log = structlog.get_logger()

TIMEOUT = 30.0
COMMIT_ATTEMPTS = 3
SLOW = 0.25
DEADLINE = TIMEOUT + 10.0
"""How long a transactional call may take in all, librdkafka's own timeout included, before the producer is
deemed stuck."""
ENDS_TIMEOUT = 5.0
"""A checkpoint waits this long for the changelog ends, then keeps the stores' previous changelog offsets."""
CHANGELOG_ENDS_EVERY = 10.0
"""Seconds between lookups of the changelog ends the local stores record: in between, a store keeps its
previous changelog offset and a restore rereads at most that much more."""


class CheckpointFailed(RuntimeError):
    """Outputs, changelog or offsets could not be committed; the uncommitted work must be redone."""


_WAIT_STEP = 1.0


class ProducerStuck(CheckpointFailed):
    """A transactional call did not return by its deadline: the producer can take no further call (librdkafka
    refuses a second one while the first is in progress) and must be replaced."""


def within_deadline(call: Callable[[], object], seconds: float, what: str) -> None:
    """Run a blocking librdkafka call on a helper thread and wait at most `seconds` of this process's running time
    for it; what it raises is raised here. The thread is a daemon: a call that never returns does not hold the
    process at exit."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # handed to the waiting thread
            raised.append(error)

    helper = threading.Thread(target=run, name=f"kafka-{what}", daemon=True)
    helper.start()
    waited = 0.0
    while True:
        step = min(_WAIT_STEP, seconds - waited)
        before = time.monotonic()
        helper.join(step)
        if not helper.is_alive():
            break
        # A step that took much longer than asked is time the process was stopped (SIGSTOP, a frozen VM), which
        # the call did not have either: it does not count against the deadline.
        waited += min(time.monotonic() - before, step + _WAIT_STEP)
        if waited >= seconds:
            raise ProducerStuck(f"{what} did not return within {seconds:.0f}s (librdkafka#5456)")
    if raised:
        raise raised[0]


@dataclass
class _Drain:
    offsets: list[TopicPartition]
    records: dict[Table, dict[bytes, bytes]]
    started: float
    produced: float
    blocked: float = 0.0
    """Seconds the loop waited for this checkpoint before it was left to drain (or finished at once)."""


class _OffsetCommit:
    """At-least-once: a drained checkpoint's offsets, committed on a helper thread while the loop goes on (done on
    the loop, the coordinator's round trip held every record back)."""

    def __init__(self, consumer: Consumer, drain: _Drain) -> None:
        self.drain = drain
        self.refused: KafkaException | None = None
        self.thread = threading.Thread(target=self._commit, args=(consumer,), name="kafka-commit", daemon=True)
        self.thread.start()

    def _commit(self, consumer: Consumer) -> None:
        try:
            consumer.commit(offsets=self.drain.offsets, asynchronous=False)
        except KafkaException as error:  # read by the loop's thread (`wait`)
            self.refused = error

    def done(self) -> bool:
        return not self.thread.is_alive()

    def wait(self) -> None:
        """Until the commit has returned; CheckpointFailed when the group refused it."""
        self.thread.join()
        if self.refused is not None:
            raise CheckpointFailed(f"offset commit refused: {self.refused.args[0]}") from self.refused


class Checkpoint:
    def __init__(self, consumer: Consumer, producer: Producer, watermarks: Consumer, exactly_once: bool,
                 tables: dict[tuple[str, int], Table], delivered: Callable[[], None] = lambda: None,
                 persist_within: float = 0.0) -> None:
        """`watermarks`: a read_uncommitted consumer of no group, for the changelog ends (`changelog_ends`).
        `delivered`: called once everything produced before a draining checkpoint is delivered, before its offsets
        are committed and its stores written: the worker produces the outputs it held meanwhile (the offsets to
        commit cover none of their input, so they need not wait for the commit or the store).
        `persist_within`: seconds over which a committed checkpoint's changes are written to the local stores
        (`persist_some`)."""
        self.consumer = consumer
        self.watermarks = watermarks
        self.producer = producer
        self.exactly_once = exactly_once
        self.tables = tables
        self.delivered = delivered
        self.offsets: dict[tuple[str, int], int] = {}
        self.failures: list[str] = []
        self.in_transaction = False
        self.unusable: ProducerStuck | KafkaException | None = None
        """Why the producer can take no further work (stuck in a call, or failed for good): `abandon` raises it."""
        self.ends_recorded_at = 0.0
        self.draining: _Drain | None = None
        """At-least-once: a checkpoint whose changelog is produced, waiting for the producer to deliver it and the
        outputs before it; its offsets are committed then (`drained`, `finish_drain`)."""
        self.committing: _OffsetCommit | None = None
        """At-least-once: a drained checkpoint whose offsets are being committed; its stores are written once they
        are (`offsets_committed`, `finish_commit`)."""
        self.persist_within = persist_within
        self.persist_started: float | None = None
        """When the changes queued for the local stores were queued (None: nothing queued)."""
        self.folded: list[dict[Table, dict[bytes, bytes]]] = []
        """The changes of checkpoints whose offsets the coming final checkpoint commits again (`fold_commit`)."""

    def use(self, producer: Producer) -> None:
        """Continue with a new producer (the previous one failed for good or is stuck)."""
        self.producer = producer
        self.in_transaction = False
        self.unusable = None

    def begin(self) -> None:
        """Open the transaction that the next outputs belong to (exactly-once; nothing to do otherwise)."""
        if self.exactly_once and not self.in_transaction:
            self.producer.begin_transaction()
            self.in_transaction = True

    def producer_failed(self, error: KafkaError) -> None:
        """The producer raised a fatal error (an idempotence sequence broken, fenced): it delivers nothing more,
        so nothing commits until it is replaced."""
        log.error("producer failed for good: the next commit is blocked", error=str(error))
        self.unusable = KafkaException(error)

    def delivery_failed(self, description: str) -> None:
        log.error("output not delivered: the next commit is blocked", output=description)
        self.failures.append(description)

    def commit(self, final: bool = False) -> float | None:
        """Commit what was processed since the last checkpoint; return how long it took (None: nothing to do, or
        an at-least-once checkpoint left draining: `drained` finishes it). `final`: the last checkpoint of these
        partitions here (revocation, stop): finished at once, and the changelog ends are recorded."""
        if self.draining is not None or self.committing is not None:
            raise RuntimeError("a checkpoint is under way: finish it (`finish_drain`, `finish_commit`) first")
        changed = [table for table in self.tables.values() if table.pending]
        if not self.offsets and not changed and not self.in_transaction:
            if final:
                self._record_ends(list(self.tables.values()))
            return None
        started = time.monotonic()
        if self.unusable is not None:
            raise CheckpointFailed(f"the producer failed for good: {self.unusable}")
        if self.exactly_once and self.failures:
            raise CheckpointFailed(f"the transaction refused {len(self.failures)} outputs "
                                   f"(first: {self.failures[0]})")
        self.begin()
        records = {table: table.seal() for table in changed}
        try:
            for table, changes in records.items():
                for key, value in table.changelog_messages(changes):
                    produce_waiting(self.producer, table.changelog, value, key, table.partition)
        except KafkaException as error:  # the open transaction failed: abort and redo
            raise CheckpointFailed(f"changelog records refused: {error.args[0]}") from error
        offsets = [TopicPartition(topic, partition, offset) for (topic, partition), offset in self.offsets.items()]
        self.offsets.clear()
        self.draining = drain = _Drain(offsets, records, started, time.monotonic())
        if self.exactly_once:
            self._commit_transaction(offsets)
        drain.blocked = time.monotonic() - started
        if not self.exactly_once and not final:
            return None
        return self.finish_drain(final)

    def drained(self) -> bool:
        """Whether the draining checkpoint can finish without waiting: the producer holds nothing undelivered (and
        the error reports are served: the caller polled it)."""
        return self.draining is not None and len(self.producer) == 0

    def finish_drain(self, final: bool = False) -> float | None:
        """Finish the draining checkpoint: wait until everything produced is delivered (at-least-once; nothing when
        `drained()`), report it (`delivered`), commit its offsets, persist its changes; return how long the whole
        checkpoint took. At-least-once and not `final`, the offsets are committed on a helper thread: None, and
        `finish_commit` ends the checkpoint."""
        drain = self.draining
        assert drain is not None, "no checkpoint is draining"
        entered = time.monotonic()
        if not self.exactly_once:
            self._await_delivery()
        self.draining = None
        self.delivered()
        if not self.exactly_once and drain.offsets:
            if not final:
                self.committing = _OffsetCommit(self.consumer, drain)
                drain.blocked += time.monotonic() - entered
                return None
            self._commit_offsets(drain.offsets)
        drain.blocked += time.monotonic() - entered
        return self._persist(drain, final)

    def offsets_committed(self) -> bool:
        """Whether the checkpoint whose offsets are being committed can finish without waiting."""
        return self.committing is not None and self.committing.done()

    def finish_commit(self) -> float:
        """Finish the checkpoint whose offsets are being committed (waiting for the commit if need be): persist its
        changes; return how long the whole checkpoint took. CheckpointFailed when the commit was refused."""
        commit, self.committing = self.committing, None
        assert commit is not None, "no offsets are being committed"
        entered = time.monotonic()
        commit.wait()
        commit.drain.blocked += time.monotonic() - entered
        return self._persist(commit.drain, final=False)

    def fold_commit(self) -> None:
        """Let the coming final checkpoint commit the offsets being committed on the helper thread once more, and
        write their changes before its own, instead of waiting for that commit: in a rebalance callback librdkafka
        may answer it only once the callback has returned. A late answer changes nothing: at-least-once, offsets
        committed again (or even set back by it) only make input be read again, and a restore applies only what
        lies below the committed offsets."""
        commit, self.committing = self.committing, None
        assert commit is not None, "no offsets are being committed"
        for tp in commit.drain.offsets:
            self.offsets.setdefault((tp.topic, tp.partition), tp.offset)
        self.folded.append(commit.drain.records)

    def _persist(self, drain: _Drain, final: bool) -> float:
        """Queue the committed changes of `drain` for the stores (write them at once if `final`), with where the
        changelogs end when it is time to record that."""
        committed = time.monotonic()
        for records in self.folded:  # committed with `drain`'s offsets: older than its changes
            for table, changes in records.items():
                table.persist(changes, None)
        self.folded = []
        ends: dict[Table, int] = {}
        if final or committed - self.ends_recorded_at >= CHANGELOG_ENDS_EVERY:
            ends = self._changelog_ends(list(drain.records))
            self.ends_recorded_at = time.monotonic()
        looked_up = time.monotonic()
        for table, changes in drain.records.items():
            if final:
                table.persist(changes, ends.get(table))
            else:
                table.queue_persist(changes, ends.get(table))  # written by `persist_some` as the loop goes on
        if not final:
            self.persist_started = time.monotonic()
        finished = time.monotonic()
        blocking = drain.blocked + (finished - committed)
        if blocking > SLOW:
            produce = drain.produced - drain.started
            log.warning("slow checkpoint", seconds=round(finished - drain.started, 3), blocking=round(blocking, 3),
                        changelog_records=sum(map(len, drain.records.values())), produce_changelog=round(produce, 3),
                        commit=round(drain.blocked - produce, 3), changelog_ends=round(looked_up - committed, 3),
                        persist=round(finished - looked_up, 3))
        return finished - drain.started

    def persist_some(self) -> None:
        """Write the committed changes queued for the local stores that are due: their share of `persist_within`
        seconds since they were queued has passed. Evenly, not as fast as the loop can: the ~35,000 changes a second
        of 25,000 events/s make, written 5 ms a loop right after the commit, took that time from a loop which had
        about a fifth of it to spare at that rate, and held its records back 60-100 ms for 300 ms after every
        checkpoint (measured in the bench's paced phase, the p99 latency's cause)."""
        if self.persist_started is None:
            return
        elapsed = time.monotonic() - self.persist_started
        share = 1.0 if elapsed >= self.persist_within else elapsed / self.persist_within
        if not sum(table.persist_share(share) for table in self.tables.values()):
            self.persist_started = None

    def _record_ends(self, tables: list[Table]) -> None:
        """Write what is queued for the stores of `tables`, then where their changelogs end, where a checkpoint
        wrote changes without it: a final checkpoint with nothing else to commit."""
        for table in tables:
            table.persist_rest()
        unrecorded = [table for table in tables if not table.end_recorded]
        if unrecorded:
            for table, end in self._changelog_ends(unrecorded).items():
                table.persist({}, end)

    def _changelog_ends(self, tables: list[Table]) -> dict[Table, int]:
        """Where each table's changelog partition ends now; when the cluster cannot say in time (a leader moving),
        every table keeps its previous changelog offset. The local store
        records it, so a restore reads only what follows; an older value only makes a restore reread."""
        try:
            ends = changelog_ends(self.watermarks, [(table.changelog, table.partition) for table in tables],
                                  ENDS_TIMEOUT)
        except KafkaException as error:
            log.warning("changelog ends unknown: the local stores keep their previous changelog offsets",
                        error=str(error.args[0]))
            return {}
        return {table: ends[(table.changelog, table.partition)] for table in tables}

    def _await_delivery(self) -> None:
        undelivered = self.producer.flush(TIMEOUT)
        if undelivered or self.failures:
            raise CheckpointFailed(f"{undelivered} records still undelivered after {TIMEOUT:.0f}s, "
                                   f"{len(self.failures)} delivery errors (first: {self.failures[:1]})")

    def _commit_offsets(self, offsets: list[TopicPartition]) -> None:
        if offsets:
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as error:
                raise CheckpointFailed(f"offset commit refused: {error.args[0]}") from error

    def _commit_transaction(self, offsets: list[TopicPartition]) -> None:
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                if offsets:
                    self._transactional(partial(self.producer.send_offsets_to_transaction, offsets,
                                                self._group_metadata(), TIMEOUT))
                    offsets = []
                self._transactional(partial(self.producer.commit_transaction, TIMEOUT))
                self.in_transaction = False
                return
            except KafkaException as exception:
                error = exception.args[0]
                if error.txn_requires_abort():
                    raise CheckpointFailed(f"transaction must be aborted: {error}") from exception
                if not error.retriable():
                    raise  # fatal (fenced, or timed out on the broker): the worker replaces its producer
                if attempt == COMMIT_ATTEMPTS:
                    raise CheckpointFailed(f"transaction not committed after {attempt} attempts: {error}") \
                        from exception
                log.warning("transaction commit failed, retrying", error=str(error), attempt=attempt)

    def _transactional(self, call: partial[None]) -> None:
        try:
            within_deadline(call, DEADLINE, call.func.__name__)
        except ProducerStuck as stuck:
            self.unusable = stuck
            raise

    def _group_metadata(self) -> object:
        """The group generation the offsets are committed under. A consumer whose session timed out (paused past
        it) holds an empty member id until it has rejoined; the broker accepts transactional offsets without a
        member (as from producers older than KIP-447), so they would not be fenced: refused here instead."""
        metadata = self.consumer.consumer_group_metadata()
        if not self.consumer.memberid():
            raise CheckpointFailed("this worker is no longer a member of its group (its session timed out)")
        return metadata

    def abandon(self, wait_for_commit: bool = True) -> None:
        """Drop uncommitted work: abort the open transaction, forget pending state, offsets and failures. Offsets
        being committed are waited for, and their changes kept if they were; `wait_for_commit=False` (partitions
        lost: their tables are closed, and restored from the changelogs by their next owner) drops those too.
        Raises `ProducerStuck` (nothing dropped yet) when the producer can take no call, and `KafkaException` when
        it failed for good: replace it (`use`)."""
        if self.unusable is not None:
            raise self.unusable
        if self.committing is not None:
            commit, self.committing = self.committing, None
            try:
                if wait_for_commit:
                    commit.wait()
                    for table, changes in commit.drain.records.items():  # committed input: kept (`discard` writes)
                        table.queue_persist(changes, None)
            except CheckpointFailed:
                pass  # not committed: its changes go with the rest
        self.folded = []
        if self.in_transaction:
            try:
                self.producer.abort_transaction(TIMEOUT)
            finally:
                self.in_transaction = False
        else:
            self.producer.flush(TIMEOUT)  # what is in flight lands before the rewind rereads its input
        for table in self.tables.values():
            table.discard()
        self.draining = None
        self.offsets.clear()
        self.failures.clear()

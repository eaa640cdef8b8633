"""A checkpoint makes processed input, its outputs and its state changes durable together, in this order:

at-least-once: produce the changelog records of the changed keys; wait until the producer has delivered every
output and changelog record, with no delivery error; commit the consumed offsets; persist the local stores. The
loop does not stop for the wait: it goes on processing while the checkpoint drains and holds the new outputs back
(one produced now would have to be delivered first), then produces them once the ones before are delivered. Nor
for the offset commit, a round trip to the group coordinator: a helper thread makes it (`_CommitOffTheLoop`), and the
stores are written once it succeeded (`finish_commit`). A final checkpoint (revocation, stop) waits for the
producer at once, and commits offsets still left to the helper itself (`fold_commit`).
exactly-once: produce the changelog records in the open transaction; add the consumed offsets to it
(`send_offsets_to_transaction`, fenced by the group generation); commit it; persist the local stores. The loop does
not stop for the commit either, a round trip to the transaction coordinator after every output is acknowledged: a
helper thread makes it (`_CommitOffTheLoop` too) while the loop goes on processing and holds the new outputs back (no
record can join a transaction being committed), and they open the next transaction once it is committed. A final
checkpoint commits on the loop.

Persisting does not stop the loop either: the committed changes are written to the local stores between batches,
at an even pace over `persist_within` seconds (`persist_some`; they stay readable until then), and the next
checkpoint, a rewind or a close writes what is left first. A final checkpoint writes them at once. The stores only
spare a restore the changelog's replay, so a crash before they are written costs a longer restore, nothing else.

Whatever fails before the offsets are committed raises `CheckpointFailed`, and the worker rewinds to the
committed offsets and drops the pending state (`abandon`): a retry then redoes exactly the uncommitted work.

Where a checkpoint is lives in one state (`phases.CheckpointState`); the producer and its transactions are the
`OutputProducer`'s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import structlog
from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafka_rekey.services.kafka.producers import produce_waiting
from kafka_rekey.services.runtime.failures import CheckpointFailed
from kafka_rekey.services.runtime.output_producer import OutputProducer
from kafka_rekey.services.runtime.phases import CheckpointState, Phase
from kafka_rekey.services.runtime.state import Table, changelog_ends

log = structlog.get_logger()

SLOW = 0.25
ENDS_TIMEOUT = 5.0
"""A checkpoint waits this long for the changelog ends, then keeps the stores' previous changelog offsets."""
CHANGELOG_ENDS_EVERY = 10.0
"""Seconds between lookups of the changelog ends the local stores record: in between, a store keeps its
previous changelog offset and a restore rereads at most that much more."""


@dataclass
class _Drain:
    offsets: list[TopicPartition]
    records: dict[Table, dict[bytes, bytes]]
    started: float
    produced: float
    blocked: float = 0.0
    """Seconds the loop waited for this checkpoint before it was left to drain (or finished at once)."""


class _CommitOffTheLoop:
    """A drained checkpoint's commit, a round trip to a coordinator, made on a helper thread while the loop goes on
    (made on the loop, it held every record back for as long as it took): at-least-once its offsets, exactly-once
    its transaction with the offsets added."""

    def __init__(self, commit: Callable[[], None], drain: _Drain, name: str) -> None:
        """`commit` raises CheckpointFailed, or a KafkaException when the producer must be replaced."""
        self.drain = drain
        self.failure: CheckpointFailed | KafkaException | None = None
        self.thread = threading.Thread(target=self._commit, args=(commit,), name=name, daemon=True)
        self.thread.start()

    def _commit(self, commit: Callable[[], None]) -> None:
        try:
            commit()
        except (CheckpointFailed, KafkaException) as failure:  # raised on the loop's thread (`wait`)
            self.failure = failure

    def done(self) -> bool:
        return not self.thread.is_alive()

    def wait(self) -> None:
        """Until the commit has returned; what it raised, raised here."""
        self.thread.join()
        if self.failure is not None:
            raise self.failure


class Checkpoint:
    def __init__(self, consumer: Consumer, producer: OutputProducer, watermarks: Consumer,
                 tables: dict[tuple[str, int], Table], delivered: Callable[[], None] = lambda: None,
                 persist_within: float = 0.0) -> None:
        """`watermarks`: a read_uncommitted consumer of no group, for the changelog ends (`changelog_ends`).
        `delivered`: called once everything produced before a draining checkpoint is delivered, before its offsets
        are committed and its stores written: the worker produces the outputs it held meanwhile (the offsets to
        commit cover none of their input, so they need not wait for the commit or the store).
        `persist_within`: seconds over which a committed checkpoint's changes are written to the local stores
        (`persist_some`). Exactly-once when `producer` is transactional."""
        self.consumer = consumer
        self.watermarks = watermarks
        self.producer = producer
        self.exactly_once = producer.transactional
        self.tables = tables
        self.delivered = delivered
        self.offsets: dict[tuple[str, int], int] = {}
        self.state = CheckpointState()
        self.ends_recorded_at = 0.0
        self._drain: _Drain | None = None
        """DRAINING: the checkpoint whose changelog is produced, waiting for the producer to deliver it and the
        outputs before it (at-least-once), or for its transaction's commit (exactly-once; `drained`,
        `finish_drain`)."""
        self._transaction: _CommitOffTheLoop | None = None
        """Exactly-once, DRAINING: the transaction being committed on the helper thread."""
        self._commit: _CommitOffTheLoop | None = None
        """COMMITTING: the drained checkpoint whose offsets are being committed; its stores are written once they
        are (`offsets_committed`, `finish_commit`)."""
        self._folded: list[dict[Table, dict[bytes, bytes]]] = []
        """The changes of checkpoints whose offsets the coming final checkpoint commits again (`fold_commit`)."""
        self.persist_within = persist_within
        self.persisting_since: float | None = None
        """When the changes queued for the local stores were queued (None: nothing queued). Not a phase: the
        stores are written while the next checkpoint drains."""

    @property
    def phase(self) -> Phase:
        return self.state.phase

    @property
    def committing_transaction(self) -> bool:
        """Whether a transaction is being committed on the helper thread (the next checkpoint waits for it)."""
        return self._transaction is not None

    def begin(self) -> None:
        """Open the transaction that the next outputs belong to (exactly-once; nothing to do otherwise); none while
        the previous one is being committed: the outputs are held until then."""
        if self._transaction is None:
            self.producer.begin()

    def commit(self, final: bool = False) -> float | None:
        """Commit what was processed since the last checkpoint; return how long it took (None: nothing to do, or
        an at-least-once checkpoint left draining: `drained` finishes it). `final`: the last checkpoint of these
        partitions here (revocation, stop): finished at once, and the changelog ends are recorded. Only from IDLE,
        or FOLDED when final."""
        self.state.require(Phase.IDLE, *((Phase.FOLDED,) if final else ()))
        changed = [table for table in self.tables.values() if table.pending]
        if not self.offsets and not changed and not self.producer.in_transaction and self.phase is Phase.IDLE:
            if final:
                self._record_ends(list(self.tables.values()))
            return None
        started = time.monotonic()
        self.producer.check_usable()
        self.begin()
        records = {table: table.seal() for table in changed}
        client = self.producer.client
        try:
            for table, changes in records.items():
                for key, value in table.changelog_messages(changes):
                    produce_waiting(client, table.changelog, value, key, table.partition)
        except KafkaException as error:  # the open transaction failed: abort and redo
            raise CheckpointFailed(f"changelog records refused: {error.args[0]}") from error
        offsets = [TopicPartition(topic, partition, offset) for (topic, partition), offset in self.offsets.items()]
        self.offsets.clear()
        self._drain = drain = _Drain(offsets, records, started, time.monotonic())
        self.state.to(Phase.DRAINING)
        if self.exactly_once and final:
            self.producer.commit(offsets, self._group_metadata)
        elif self.exactly_once:
            group_metadata = self._group_metadata() if offsets else None
            self._transaction = _CommitOffTheLoop(partial(self.producer.commit, offsets, lambda: group_metadata),
                                                  drain, "kafka-transaction")
        drain.blocked = time.monotonic() - started
        if not final:
            return None
        return self.finish_drain(final)

    def drained(self) -> bool:
        """Whether the draining checkpoint can finish without waiting: its transaction's commit has returned
        (exactly-once), or the producer holds nothing undelivered (and the error reports are served: the caller
        polled it)."""
        if self.phase is not Phase.DRAINING:
            return False
        if self._transaction is not None:
            return self._transaction.done()
        return self.producer.undelivered() == 0

    def finish_drain(self, final: bool = False) -> float | None:
        """Finish the draining checkpoint: wait until everything produced is delivered (at-least-once), or until its
        transaction is committed (exactly-once; nothing when `drained()`), report it (`delivered`), commit its
        offsets (at-least-once), persist its changes; return how long the whole checkpoint took. At-least-once and
        not `final`, the offsets are committed on a helper thread: None, and `finish_commit` ends the checkpoint."""
        self.state.require(Phase.DRAINING)
        drain = self._drain
        assert drain is not None
        entered = time.monotonic()
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            transaction.wait()
        elif not self.exactly_once:
            self.producer.deliver_all()
        commit_off_the_loop = not self.exactly_once and bool(drain.offsets) and not final
        self._drain = None
        self.state.to(Phase.COMMITTING if commit_off_the_loop else Phase.IDLE)
        self.delivered()  # out of DRAINING first: else the outputs it produces would be held again
        if commit_off_the_loop:
            self._commit = _CommitOffTheLoop(partial(self._commit_offsets, drain.offsets), drain, "kafka-commit")
            drain.blocked += time.monotonic() - entered
            return None
        if not self.exactly_once:
            self._commit_offsets(drain.offsets)
        drain.blocked += time.monotonic() - entered
        return self._persist(drain, final)

    def offsets_committed(self) -> bool:
        """Whether the checkpoint whose offsets are being committed can finish without waiting."""
        return self.phase is Phase.COMMITTING and self._commit is not None and self._commit.done()

    def finish_commit(self) -> float:
        """Finish the checkpoint whose offsets are being committed (waiting for the commit if need be): persist its
        changes; return how long the whole checkpoint took. CheckpointFailed when the commit was refused."""
        self.state.require(Phase.COMMITTING)
        commit = self._commit
        assert commit is not None
        entered = time.monotonic()
        commit.wait()
        self._commit = None
        self.state.to(Phase.IDLE)
        commit.drain.blocked += time.monotonic() - entered
        return self._persist(commit.drain, final=False)

    def fold_commit(self) -> None:
        """Let the coming final checkpoint commit the offsets being committed on the helper thread once more, and
        write their changes before its own, instead of waiting for that commit: in a rebalance callback librdkafka
        may answer it only once the callback has returned. A late answer changes nothing: at-least-once, offsets
        committed again (or even set back by it) only make input be read again, and a restore applies only what
        lies below the committed offsets."""
        self.state.to(Phase.FOLDED)
        commit, self._commit = self._commit, None
        assert commit is not None
        for tp in commit.drain.offsets:
            self.offsets.setdefault((tp.topic, tp.partition), tp.offset)
        self._folded.append(commit.drain.records)

    def _persist(self, drain: _Drain, final: bool) -> float:
        """Queue the committed changes of `drain` for the stores (write them at once if `final`), with where the
        changelogs end when it is time to record that."""
        committed = time.monotonic()
        for records in self._folded:  # committed with `drain`'s offsets: older than its changes
            for table, changes in records.items():
                table.persist(changes, None)
        self._folded = []
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
            self.persisting_since = time.monotonic()
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
        seconds since they were queued has passed. Evenly, not as fast as the loop can: written all at once right
        after the commit, they held the records behind them back (the paced p99 latency's cause, docs/BENCHMARKS.md)."""
        if self.persisting_since is None:
            return
        elapsed = time.monotonic() - self.persisting_since
        share = 1.0 if elapsed >= self.persist_within else elapsed / self.persist_within
        if not sum(table.persist_share(share) for table in self.tables.values()):
            self.persisting_since = None

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

    def _commit_offsets(self, offsets: list[TopicPartition]) -> None:
        if offsets:
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as error:
                raise CheckpointFailed(f"offset commit refused: {error.args[0]}") from error

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
        it failed for good: replace it (`OutputProducer.replace`) and abandon again. A transaction being committed
        is waited for first (the producer takes no other call meanwhile), and its changes kept if it was."""
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            try:
                transaction.wait()
                if wait_for_commit:
                    for table, changes in transaction.drain.records.items():  # committed input: kept (`discard` writes)
                        table.queue_persist(changes, None)
            except (CheckpointFailed, KafkaException):
                pass  # not committed: its changes go with the rest
        if self.producer.unusable is not None:
            raise self.producer.unusable
        commit, self._commit = self._commit, None
        if commit is not None:
            try:
                if wait_for_commit:
                    commit.wait()
                    for table, changes in commit.drain.records.items():  # committed input: kept (`discard` writes)
                        table.queue_persist(changes, None)
            except CheckpointFailed:
                pass  # not committed: its changes go with the rest
        self._folded = []
        self._drain = None
        self.state.reset()
        self.producer.abort()
        for table in self.tables.values():
            table.discard()
        self.offsets.clear()

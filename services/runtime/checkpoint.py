"""A checkpoint makes processed input, its outputs and its state changes durable together, in this order:

at-least-once: produce the changelog records of the changed keys; flush the producer (every output and changelog
record delivered, no delivery error); commit the consumed offsets; persist the local stores.
exactly-once: produce the changelog records in the open transaction; add the consumed offsets to it
(`send_offsets_to_transaction`, fenced by the group generation); commit it; persist the local stores.

Whatever fails before the offsets are committed raises `CheckpointFailed`, and the worker rewinds to the
committed offsets and drops the pending state (`abandon`): a retry then redoes exactly the uncommitted work.
"""

from __future__ import annotations

import structlog
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from services.runtime.state import Table

log = structlog.get_logger()

TIMEOUT = 30.0
COMMIT_ATTEMPTS = 3


class CheckpointFailed(RuntimeError):
    """Outputs, changelog or offsets could not be committed; the uncommitted work must be redone."""


class Checkpoint:
    def __init__(self, consumer: Consumer, producer: Producer, exactly_once: bool,
                 tables: dict[tuple[str, int], Table]) -> None:
        self.consumer = consumer
        self.producer = producer
        self.exactly_once = exactly_once
        self.tables = tables
        self.offsets: dict[tuple[str, int], int] = {}
        self.failures: list[str] = []
        self.in_transaction = False

    def begin(self) -> None:
        """Open the transaction that the next outputs belong to (exactly-once; nothing to do otherwise)."""
        if self.exactly_once and not self.in_transaction:
            self.producer.begin_transaction()
            self.in_transaction = True

    def delivery_failed(self, description: str) -> None:
        log.error("output not delivered: the next commit is blocked", output=description)
        self.failures.append(description)

    def commit(self) -> None:
        changed = [table for table in self.tables.values() if table.pending]
        if not self.offsets and not changed and not self.in_transaction:
            return
        self.begin()
        for table in changed:
            for key, value in table.pending.items():
                self.producer.produce(table.changelog, value, key, table.partition)
        offsets = [TopicPartition(topic, partition, offset) for (topic, partition), offset in self.offsets.items()]
        if self.exactly_once:
            self._commit_transaction(offsets)
        else:
            self._flush_and_commit(offsets)
        for table in changed:
            table.persist(self._changelog_end(table))
        self.offsets.clear()

    def _changelog_end(self, table: Table) -> int | None:
        """Where the changelog partition ends now (None if the cluster cannot say: a leader moving). The local
        store records it, so a restore reads only what follows; an older value only makes a restore reread."""
        try:
            return int(self.consumer.get_watermark_offsets(TopicPartition(table.changelog, table.partition),
                                                           timeout=5)[1])
        except KafkaException as error:
            log.warning("changelog end unknown: the local store keeps its previous changelog offset",
                        changelog=table.changelog, partition=table.partition, error=str(error.args[0]))
            return None

    def _flush_and_commit(self, offsets: list[TopicPartition]) -> None:
        undelivered = self.producer.flush(TIMEOUT)
        if undelivered or self.failures:
            raise CheckpointFailed(f"{undelivered} records still undelivered after {TIMEOUT:.0f}s, "
                                   f"{len(self.failures)} delivery errors (first: {self.failures[:1]})")
        if offsets:
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as error:
                raise CheckpointFailed(f"offset commit refused: {error.args[0]}") from error

    def _commit_transaction(self, offsets: list[TopicPartition]) -> None:
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                if offsets:
                    self.producer.send_offsets_to_transaction(offsets, self.consumer.consumer_group_metadata(),
                                                              TIMEOUT)
                    offsets = []
                self.producer.commit_transaction(TIMEOUT)
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

    def abandon(self) -> None:
        """Drop uncommitted work: abort the open transaction, forget pending state, offsets and failures."""
        if self.in_transaction:
            try:
                self.producer.abort_transaction(TIMEOUT)
            finally:
                self.in_transaction = False
        else:
            self.producer.flush(TIMEOUT)  # what is in flight lands before the rewind rereads its input
        for table in self.tables.values():
            table.discard()
        self.offsets.clear()
        self.failures.clear()

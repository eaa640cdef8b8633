"""The one owner of a worker's producer (as Kafka Streams' `StreamsProducer`): it creates it, opens, commits and
aborts its transactions, adds the consumed offsets to them, and replaces it when it is fenced, failed for good or
stuck in a call. The loop produces to `client` directly: no Python call per record besides librdkafka's own.

librdkafka does not always keep the timeout a transactional call is given: `send_offsets_to_transaction` waits
for ever once the group coordinator it cached is gone for good (a broker killed; confluentinc/librdkafka#5456 and
#5511). Each transactional call therefore runs under a deadline of our own; a call that outlives it leaves the
producer unusable (`ProducerStuck`), and `replace` makes a new one, which fences the stuck one's transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import structlog
from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from kafka_rekey.services.runtime.failures import CheckpointFailed, ProducerStuck

log = structlog.get_logger()

TIMEOUT = 30.0
INIT_TIMEOUT = 60.0
COMMIT_ATTEMPTS = 3
DEADLINE = TIMEOUT + 10.0
"""How long a transactional call may take in all, librdkafka's own timeout included, before the producer is
deemed stuck."""
_WAIT_STEP = 1.0

MakeProducer = Callable[[dict[str, Any]], Producer]


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


class OutputProducer:
    def __init__(self, config: dict[str, Any], make: MakeProducer = Producer) -> None:
        """`config`: the librdkafka configuration; transactional when it has a `transactional.id`."""
        self.config = config
        self.make = make
        self.transactional = "transactional.id" in config
        self.in_transaction = False
        self.failures: list[str] = []
        """Outputs librdkafka refused or could not deliver since the last checkpoint: the next commit is blocked."""
        self.unusable: ProducerStuck | KafkaException | None = None
        """Why the producer can take no further work (stuck in a call, or failed for good)."""
        self.made = 0
        self.client = self._new_client()

    def _new_client(self) -> Producer:
        self.made += 1
        made = self.made

        def report_error(error: KafkaError) -> None:
            log.log(logging.ERROR if error.fatal() else logging.WARNING, "kafka error", error=str(error))
            if error.fatal() and made == self.made:  # not a replaced producer's late report
                log.error("producer failed for good: the next commit is blocked", error=str(error))
                self.unusable = KafkaException(error)

        return self.make({**self.config, "error_cb": report_error, "on_delivery": self._delivery_report})

    def _delivery_report(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.output_failed(f"{message.topic()}[{message.partition()}]: {error}")

    def output_failed(self, description: str) -> None:
        if not self.failures:  # the checkpoint it fails says how many followed (a fence drops thousands)
            log.error("output not delivered: the next commit is blocked", output=description)
        self.failures.append(description)

    def start(self) -> None:
        """Register the transactional.id with the cluster, fencing any earlier producer that had it."""
        if self.transactional:
            self.client.init_transactions(INIT_TIMEOUT)

    def check_usable(self) -> None:
        """CheckpointFailed when nothing can be committed: the producer failed for good, or (exactly-once) the
        open transaction refused an output."""
        if self.unusable is not None:
            raise CheckpointFailed(f"the producer failed for good: {self.unusable}")
        if self.transactional and self.failures:
            raise CheckpointFailed(f"the transaction refused {len(self.failures)} outputs "
                                   f"(first: {self.failures[0]})")

    def begin(self) -> None:
        """Open the transaction that the next outputs belong to (transactional; nothing to do otherwise)."""
        if self.transactional and not self.in_transaction:
            self.client.begin_transaction()
            self.in_transaction = True

    def commit(self, offsets: list[TopicPartition], group_metadata: Callable[[], object]) -> None:
        """Add `offsets` to the open transaction under the group generation `group_metadata()` says, and commit
        it; a retriable failure is retried. CheckpointFailed when it must be aborted; a fatal KafkaException
        (fenced) or ProducerStuck when the producer must be replaced."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                if offsets:
                    self._within_deadline(partial(self.client.send_offsets_to_transaction, offsets,
                                                  group_metadata(), TIMEOUT))
                    offsets = []
                self._within_deadline(partial(self.client.commit_transaction, TIMEOUT))
                self.in_transaction = False
                return
            except KafkaException as exception:
                error = exception.args[0]
                if error.txn_requires_abort():
                    raise CheckpointFailed(f"transaction must be aborted: {error}") from exception
                if not error.retriable():
                    raise
                if attempt == COMMIT_ATTEMPTS:
                    raise CheckpointFailed(f"transaction not committed after {attempt} attempts: {error}") \
                        from exception
                log.warning("transaction commit failed, retrying", error=str(error), attempt=attempt)

    def _within_deadline(self, call: partial[None]) -> None:
        try:
            within_deadline(call, DEADLINE, call.func.__name__)
        except ProducerStuck as stuck:
            self.unusable = stuck
            raise

    def deliver_all(self) -> None:
        """Wait until everything produced is delivered; CheckpointFailed if it was not, or an output failed."""
        undelivered = self.client.flush(TIMEOUT)
        if undelivered or self.failures:
            raise CheckpointFailed(f"{undelivered} records still undelivered after {TIMEOUT:.0f}s, "
                                   f"{len(self.failures)} delivery errors (first: {self.failures[:1]})")

    def undelivered(self) -> int:
        return len(self.client)

    def abort(self) -> None:
        """Drop the open transaction (or, at-least-once, let what is in flight land before a rewind rereads its
        input) and forget the failures. Raises why the producer is unusable, before anything is dropped, when it
        can take no call: `replace` it."""
        if self.unusable is not None:
            raise self.unusable
        if self.in_transaction:
            try:
                self.client.abort_transaction(TIMEOUT)
            finally:
                self.in_transaction = False
        else:
            self.client.flush(TIMEOUT)
        self.failures.clear()

    def replace(self) -> None:
        """A new producer with the same configuration, fencing whatever the old one left open; the old one's queue
        is purged unless it is stuck in a call (it takes none: it is left to its thread)."""
        if not isinstance(self.unusable, ProducerStuck):
            self.client.purge()
        self.client = self._new_client()
        self.in_transaction = False
        self.unusable = None
        self.failures.clear()
        self.start()

    def close(self) -> None:
        self.client.flush(TIMEOUT)

"""Settings of the runtime services (`REKEY_*`) and the librdkafka configuration they imply, in one place."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from kafka_rekey.services.kafka.producers import PRODUCER_DEFAULTS
from kafka_rekey.services.settings import ServiceSettings


class RuntimeSettings(ServiceSettings):
    app_id: str | None = Field(default=None, description="Consumer group id; the service's own by default.")
    worker_id: str | None = Field(
        default=None, description="Stable id of this worker (its transactional.id suffix); persisted in the state "
                                  "directory when unset, so a restarted worker fences its own previous incarnation.")
    state_store: Literal["memory", "rocksdb"] = "rocksdb"
    state_memory_mb: int = Field(
        default=32, ge=8, description="RocksDB memory of a worker, all its stores together (block cache and "
                                      "memtables); state beyond it lives on disk (and the OS page cache).")
    internal_partitions: int = Field(default=8, ge=1, description="Partitions of the sequencing topic.")
    internal_replication_factor: int = Field(default=1, ge=1)
    dedupe_horizon_hours: float = Field(
        default=168.0, gt=0, description="How long a dedupe id is remembered (retention of its changelog)."
    )
    sequence_idle_days: float | None = Field(
        default=None, gt=0, description="Sequences horizon: an output key idle this long is forgotten, its last "
                                        "sequence kept in a compact record a later event continues from; unset: "
                                        "never (docs/ARCHITECTURE.md).")
    commit_interval_ms: int | None = Field(
        default=None, ge=50, le=60_000,
        description="Checkpoint every this often; default 1000 at-least-once, 100 exactly-once (outputs become "
                    "readable at the commit of their transaction, so the interval bounds their latency).")
    batch_size: int = Field(
        default=5_000, ge=1, le=1_000_000,
        description="Items per batch: records, an internal record counting each envelope it carries (the worker "
                    "asks consume() for fewer records while they carry many). The worker's memory grows with it (a "
                    "batch's records, outputs and the state they change); a larger batch is only slightly faster "
                    "(docs/BENCHMARKS.md).")
    poll_timeout_ms: int = Field(default=100, ge=1, le=5_000, description="Longest wait of one consume() call.")
    transaction_timeout_ms: int = Field(
        default=60_000, ge=1_000, description="Exactly-once: how long a dead worker's open transaction may hold "
                                              "readers back before the broker aborts it; also how long a record "
                                              "may wait for a broker (librdkafka caps message.timeout.ms to it).")
    transaction_retry_backoff_ms: int = Field(
        default=10, ge=1, le=1_000,
        description="Exactly-once: the producer's first wait before retrying a request the broker refused for now "
                    "(librdkafka's retry.backoff.ms, doubling up to transaction_retry_backoff_max_ms), e.g. adding "
                    "the offsets while the coordinator still records the partitions just added: a commit that "
                    "meets it waits for that retry (docs/BENCHMARKS.md).")
    transaction_retry_backoff_max_ms: int = Field(
        default=100, ge=1, le=10_000,
        description="Exactly-once: the longest of those waits (librdkafka's retry.backoff.max.ms).")
    session_timeout_ms: int = Field(
        default=10_000, ge=3_000, description="Consumer group session timeout; a worker stalled longer drops its "
                                              "batch rather than write it (another worker may own it by then).")
    assignment_strategy: Literal["cooperative-sticky", "range"] = Field(
        default="cooperative-sticky",
        description="librdkafka's partition.assignment.strategy: cooperative-sticky moves only the partitions that "
                    "move in a rebalance while the rest keep being processed; range revokes every partition of "
                    "every worker (eager). Every worker of a group must have the same: librdkafka cannot move "
                    "a running group from one to the other (docs/RELIABILITY.md).")
    liveness_s: float = Field(
        default=120.0, gt=0, description="/healthz fails once the loop has not turned for this long outside a "
                                         "restore; keep it above the longest batch and checkpoint.")
    restore_stall_s: float = Field(
        default=60.0, gt=0, description="/healthz fails once a restore under way has read no changelog record for "
                                        "this long (a restore that reads stays healthy however long it takes).")
    top_orgs: int = Field(default=20, ge=1, description="Orgs exported individually in the per-org metric.")
    service_version: str = "0.1.0"

    @model_validator(mode="after")
    def _backoff_ordered(self) -> RuntimeSettings:
        if self.transaction_retry_backoff_max_ms < self.transaction_retry_backoff_ms:
            raise ValueError(f"REKEY_TRANSACTION_RETRY_BACKOFF_MAX_MS ({self.transaction_retry_backoff_max_ms}) is "
                             f"below REKEY_TRANSACTION_RETRY_BACKOFF_MS ({self.transaction_retry_backoff_ms})")
        return self

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly_once"

    @property
    def checkpoint_interval_ms(self) -> int:
        if self.commit_interval_ms is not None:
            return self.commit_interval_ms
        return 100 if self.exactly_once else 1000

    def consumer_config(self, group_id: str) -> dict[str, Any]:
        return {
            **self.kafka.librdkafka(),
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed" if self.exactly_once else "read_uncommitted",
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": 1_000,
            "max.poll.interval.ms": 300_000,
            "partition.assignment.strategy": self.assignment_strategy,
            "fetch.wait.max.ms": 50,
            # A subscribed topic missing from the metadata at the first assignment (just created, not yet known
            # to every broker) joins the assignment at the next refresh: keep that seconds, not 5 minutes away.
            "topic.metadata.refresh.interval.ms": 5_000,
            # A small prefetch keeps a worker's memory small as long as fetching resumes soon after the queue
            # drops below it: with librdkafka's default backoff the loop waited for records (docs/BENCHMARKS.md).
            "queued.max.messages.kbytes": 4_096,
            "fetch.queue.backoff.ms": 10,
            # One fetch response may overshoot the prefetch by its whole size, decompressed: a small one keeps
            # the throughput and lowers the peak RSS (docs/BENCHMARKS.md).
            "fetch.max.bytes": 4 * 1024 * 1024,
            "max.partition.fetch.bytes": 512 * 1024,
        }

    def producer_config(self, transactional_id: str | None) -> dict[str, Any]:
        config: dict[str, Any] = {
            **self.kafka.librdkafka(),
            **PRODUCER_DEFAULTS,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            # Past it produce() waits for deliveries (BufferError): more than a second of output at full speed,
            # and a checkpoint flushes every interval; a larger queue only raised the peak RSS.
            "queue.buffering.max.kbytes": 32_768,
            "delivery.report.only.error": True,
        }
        if transactional_id is not None:
            config["transactional.id"] = transactional_id
            config["transaction.timeout.ms"] = self.transaction_timeout_ms
            config["retry.backoff.ms"] = self.transaction_retry_backoff_ms
            config["retry.backoff.max.ms"] = self.transaction_retry_backoff_max_ms
        return config

"""The hand-off topic's one reader and writer: how a backfill hands its keys and offsets to the live service.

The compacted topic the catalog names `checkpoint_topic` holds, besides `shared.handoff`'s `seq/`, `row/` and
`src/` records (their formats), the backfill's own:
- `run/<sources>/<family>`: the run record (the source snapshot it covers, how far it got: `started` ->
  `data_written` -> `complete`, how many write tasks it numbers in); never written in a transaction;
- `task/<run id>/<partition>`: a write task's completion marker (its tally), committed in the task's transaction
  with its records and their `seq/` records (`spark_backfill.sink`).

The live service's `Handoff.apply` ignores both prefixes. Write order makes a half-written hand-off harmless:
`row/` and `seq/` records with the data, the `src/` records and the `complete` run record last, from the driver;
the live service starts only after `complete`. Everything here is read with read_committed, except the run
records (`read_runs`), which a killed run's open transaction must not hide from its re-run.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.handoff import Handoff, OffsetRange, source_offset_record
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.shared.translation import RowIds

log = structlog.get_logger()

RUN_PREFIX, TASK_PREFIX = "run/", "task/"
STARTED, DATA_WRITTEN, COMPLETE = "started", "data_written", "complete"


def run_key(source: str, family: str) -> bytes:
    return f"{RUN_PREFIX}{source}/{family}".encode()


def task_key(run_id: str, partition: int) -> bytes:
    """The completion marker of write task `partition` of run `run_id`."""
    return f"{TASK_PREFIX}{run_id}/{partition}".encode()


def transactional_id(run_id: str, partition: int) -> str:
    """One per write task, the same for every attempt: a new attempt fences the one before it."""
    return f"rekey-backfill-{run_id}-{partition}"


@dataclass
class RunRecord:
    """One backfill run of `source` (sources joined by `+`) into `family`: its snapshot and state."""

    source: str
    family: str
    offsets: list[OffsetRange]
    state: str = STARTED
    continued: bool = False
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    write_partitions: int | None = None
    """How many write tasks number the keys: a resumed run must split them the same way."""

    @classmethod
    def create(cls, source: str, family: str, offsets: list[OffsetRange], continued: bool = False) -> RunRecord:
        return cls(source, family, list(offsets), continued=continued)

    def to_bytes(self) -> bytes:
        data = asdict(self)
        data["offsets"] = [o.to_json() for o in self.offsets]
        return json.dumps(data, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, value: bytes) -> RunRecord:
        data = json.loads(value)
        data["offsets"] = [OffsetRange.from_json(o) for o in data["offsets"]]
        return cls(**data)


@dataclass
class HandoffTopic:
    """The hand-off topic as read back: the hand-off itself, the backfill runs, and the committed task markers
    by (run id, partition)."""

    handoff: Handoff = field(default_factory=Handoff)
    runs: dict[str, RunRecord] = field(default_factory=dict)
    tasks: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    def run(self, source: str, family: str) -> RunRecord | None:
        return self.runs.get(run_key(source, family).decode())

    def apply(self, key: bytes, value: bytes | None) -> None:
        text = key.decode()
        if text.startswith(RUN_PREFIX):
            if value is None:
                self.runs.pop(text, None)
            else:
                self.runs[text] = RunRecord.from_bytes(value)
        elif text.startswith(TASK_PREFIX):
            run_id, partition = text[len(TASK_PREFIX):].rsplit("/", 1)
            if value is not None:
                self.tasks[(run_id, int(partition))] = json.loads(value)
        else:
            self.handoff.apply(key, value)


def read_handoff(config: Mapping[str, Any], topic: str, row_ids: bool = True) -> HandoffTopic:
    """Every committed record of the hand-off topic up to its end offsets at the time of the call, folded (later
    records win); the CDC rows' ids only with `row_ids`."""
    read = HandoffTopic(Handoff(keep_row_ids=row_ids))
    for message in iter_topic(dict(config), topic):
        read.apply(message.key() or b"", message.value())
    return read


def read_runs(config: Mapping[str, Any], topic: str) -> dict[str, RunRecord]:
    """The run records only, read uncommitted: they are never in a transaction, and a run killed while a task
    was committing leaves one open that would hold a committed read back until its re-run fences it."""
    consumer = Consumer({**config, "group.id": f"rekey-handoff-{uuid.uuid4()}"})
    try:
        if topic not in consumer.list_topics(topic, timeout=10).topics:
            return {}
    finally:
        consumer.close()
    read = HandoffTopic(Handoff(keep_row_ids=False))
    for message in iter_topic(dict(config), topic, isolation="read_uncommitted"):
        key = message.key() or b""
        if key.startswith(RUN_PREFIX.encode()):
            read.apply(key, message.value())
    return read.runs


def _producer(config: Mapping[str, Any]) -> Producer:
    return Producer({**config, "enable.idempotence": True, "acks": "all", "partitioner": "murmur2_random"})


def _flush(producer: Producer, topic: str) -> None:
    if producer.flush(60) > 0:
        raise RuntimeError(f"hand-off topic {topic}: records not acknowledged within 60 s")


def write_run(config: Mapping[str, Any], topic: str, run: RunRecord) -> None:
    producer = _producer(config)
    producer.produce(topic, key=run_key(run.source, run.family), value=run.to_bytes())
    _flush(producer, topic)


def complete(config: Mapping[str, Any], topic: str, run: RunRecord) -> None:
    """Write the `src/` records of the snapshot (where the live service starts), then mark the run complete."""
    producer = _producer(config)
    for offsets in run.offsets:
        for partition, next_offset in sorted(offsets.end.items()):
            key, value = source_offset_record(offsets.topic, partition, next_offset)
            producer.produce(topic, key=key, value=value)
    run.state, run.finished_at = COMPLETE, time.time()
    producer.produce(topic, key=run_key(run.source, run.family), value=run.to_bytes())
    _flush(producer, topic)


def fence(config: Mapping[str, Any], run_id: str, partitions: int) -> None:
    """Abort whatever transaction the write tasks of a killed run left open (a resumed run's first step)."""
    for partition in range(partitions):
        producer = Producer({**config, "transactional.id": transactional_id(run_id, partition)})
        producer.init_transactions(60)


def task_partition(run_id: str, partition: int, topic_partitions: int) -> int:
    """The hand-off partition of a task's marker: written there explicitly, read back from there alone."""
    return partition_for(task_key(run_id, partition).decode(), topic_partitions)


def committed_task(config: Mapping[str, Any], topic: str, topic_partitions: int, run_id: str, partition: int,
                   since: Mapping[int, int], timeout: float = 120.0) -> dict[str, Any] | None:
    """The marker of task `partition` of `run_id` if a transaction holding it committed at or after offset
    `since` of its partition, else None. Call it after `init_transactions` with the task's transactional id: no
    attempt of the task can commit afterwards, so every marker there will be is below the high watermark now.

    A read_uncommitted look comes first: it sees every marker an attempt sent, committed or not, and is never held
    back. Without one there (the common case: a first attempt, or one killed before it sent its marker) nothing
    committed. With one, a committed read decides; other tasks' open transactions hold it back at the last stable
    offset until they commit or a retry fences them, for up to `timeout` seconds. Had every task looked committed,
    tasks waiting on a killed task's open transaction could hold every core its retry needs."""
    wanted = task_key(run_id, partition)
    where = task_partition(run_id, partition, topic_partitions)
    tp = TopicPartition(topic, where, since.get(where, 0))
    # The high watermark, not the last stable offset a committed read would report.
    watcher = Consumer({**config, "group.id": f"rekey-task-{uuid.uuid4()}", "isolation.level": "read_uncommitted"})
    try:
        _low, high = watcher.get_watermark_offsets(TopicPartition(topic, where), timeout=10, cached=False)
    finally:
        watcher.close()
    if high <= tp.offset:
        return None
    if _last_value(config, tp, high, wanted, "read_uncommitted", timeout) is None:
        return None
    return _last_value(config, tp, high, wanted, "read_committed", timeout)


def _last_value(config: Mapping[str, Any], tp: TopicPartition, high: int, key: bytes, isolation: str,
                timeout: float) -> dict[str, Any] | None:
    """The last value of `key` in `tp` from its offset up to `high`, read at `isolation`."""
    consumer = Consumer({**config, "group.id": f"rekey-task-{uuid.uuid4()}", "enable.auto.commit": False,
                         "isolation.level": isolation, "enable.partition.eof": True})
    try:
        consumer.assign([tp])
        found: dict[str, Any] | None = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        if (message.offset() or 0) >= high:
                            return found
                        continue
                    raise KafkaException(error)
                if message.key() == key and message.value() is not None:
                    found = json.loads(message.value() or b"{}")
        raise TimeoutError(f"hand-off topic {tp.topic} partition {tp.partition}: transactions still open after "
                           f"{timeout:.0f} s; {key.decode()} cannot tell whether it committed")
    finally:
        consumer.close()


class HandoffSequences:
    """The live service's view of the hand-off: each key's last sequence and the CDC rows' ids."""

    def __init__(self, handoff: Handoff) -> None:
        self.handoff = handoff

    @classmethod
    def load(cls, catalog: Catalog, settings: RuntimeSettings, group_id: str,
             row_ids: bool = True) -> HandoffSequences:
        """Read the hand-off once at start-up; commit the consumer group at the snapshot end offsets of the source
        partitions it never committed (the first live record is the first one the backfill did not read). `row_ids`:
        keep the CDC rows' ids (a process that translates a source that remembers rows)."""
        config = settings.kafka.librdkafka()
        handoff = read_handoff(config, catalog.checkpoint_topic, row_ids).handoff
        if handoff.source_offsets:
            commit_start_offsets(config, group_id, handoff)
        log.info("handoff loaded", keys=len(handoff.last_sequences), partitions=len(handoff.source_offsets),
                 rows=len(handoff.row_ids))
        return cls(handoff)

    def last_sequence(self, sequence_key: str) -> int:
        return self.handoff.last_sequences.get(sequence_key, 0)

    @property
    def row_ids(self) -> dict[tuple[str, bytes], RowIds]:
        """(source topic, `shared.translation.row_key`) -> ids of every CDC row the backfill translated."""
        return self.handoff.row_ids


def commit_start_offsets(config: dict[str, object], group_id: str, handoff: Handoff) -> None:
    """Commit the snapshot offsets for partitions the group has no committed offset for yet."""
    consumer = Consumer({**config, "group.id": group_id, "enable.auto.commit": False})
    try:
        wanted = [TopicPartition(t, p) for t, p in handoff.source_offsets]
        committed = consumer.committed(wanted, timeout=30)
        fresh = [TopicPartition(tp.topic, tp.partition, handoff.source_offsets[(tp.topic, tp.partition)])
                 for tp in committed if tp.offset < 0]
        if fresh:
            consumer.commit(offsets=fresh, asynchronous=False)
            log.info("live service starts at the backfill snapshot", group=group_id, partitions=len(fresh))
    finally:
        consumer.close()

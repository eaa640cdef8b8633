"""The hand-off checkpoint topic, as the backfill reads and writes it (record formats: `shared.handoff`).

Besides `shared.handoff`'s `seq/...`, `row/...` and `src/...` records, the backfill keeps one
`run/<source>/<family>` record per run: the source snapshot it covers and how far it got (`started` ->
`data_written` -> `complete`). The live service's `Handoff.apply` ignores that prefix. A killed run is re-run
against the same snapshot, so it rebuilds the same (key, sequence) pairs and can skip the ones already written.

Write order makes a half-written hand-off harmless: `row/` records (by Spark, with the data, before the run record
`data_written`) and `seq/` records (by Spark) first, the `src/` records and the `complete` run record last, from
the driver; the live service must start only after `complete`. The backfill reads no `row/` record back.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from shared.handoff import Handoff, source_offset_record
from spark_backfill.extract import OffsetRange

RUN_PREFIX = "run/"
STARTED, DATA_WRITTEN, COMPLETE = "started", "data_written", "complete"


def run_key(source: str, family: str) -> bytes:
    return f"{RUN_PREFIX}{source}/{family}".encode()


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
class CheckpointState:
    handoff: Handoff = field(default_factory=lambda: Handoff(keep_row_ids=False))
    runs: dict[str, RunRecord] = field(default_factory=dict)

    def run(self, source: str, family: str) -> RunRecord | None:
        return self.runs.get(run_key(source, family).decode())


def read_state(config: Mapping[str, Any], topic: str, timeout: float = 60.0) -> CheckpointState:
    """Fold every record of the checkpoint topic up to its current end (later records win)."""
    state = CheckpointState()
    consumer = Consumer({**config, "group.id": f"rekey-backfill-{uuid.uuid4()}", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return state
        remaining = {}
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high > low:
                remaining[partition] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in remaining])
        deadline = time.monotonic() + timeout
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(f"checkpoint topic {topic}: partitions {sorted(remaining)} not read in {timeout}s")
            for message in consumer.consume(1000, timeout=1.0):
                if message.error():
                    raise KafkaException(message.error())
                key, value = message.key() or b"", message.value()
                if key.startswith(RUN_PREFIX.encode()):
                    if value is None:
                        state.runs.pop(key.decode(), None)
                    else:
                        state.runs[key.decode()] = RunRecord.from_bytes(value)
                else:
                    state.handoff.apply(key, value)
                if (message.offset() or 0) + 1 >= remaining.get(message.partition() or 0, 0):
                    remaining.pop(message.partition(), None)
    finally:
        consumer.close()
    return state


def _producer(config: Mapping[str, Any]) -> Producer:
    return Producer({**config, "enable.idempotence": True, "acks": "all", "partitioner": "murmur2_random"})


def _flush(producer: Producer, topic: str) -> None:
    if producer.flush(60) > 0:
        raise RuntimeError(f"checkpoint topic {topic}: records not acknowledged within 60 s")


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

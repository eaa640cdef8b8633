"""Load: number each write task's sorted rows and write them exactly once, from the Python worker with
confluent-kafka, in one Kafka transaction per task (the reasoning is in docs/BACKFILL.md, "Exactly once").

A task's transaction holds its domain records, its dead letters, the `seq/` hand-off record of every key it
numbered and, last, its completion marker (`services.handoff.task_key`). Its `transactional.id` is the run id and
the task's partition, the same for every attempt: a retry's `init_transactions` fences the attempt before it and
aborts its open transaction; then it looks for its marker (`services.handoff.committed_task`) and writes nothing if
an attempt before it committed. The mapInArrow output is one row per task:
its partition and the tally the driver reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_rekey.spark_backfill import transform

if TYPE_CHECKING:
    import pyarrow as pa

# Above the longest write task; the broker's transaction.max.timeout.ms (15 min by default) caps it.
TRANSACTION_TIMEOUT_MS = 900_000
PRODUCER_SETTINGS = {
    "enable.idempotence": True,
    "acks": "all",
    "compression.type": "lz4",
    "linger.ms": 20,
    "batch.size": 262144,
    # Dead letters carry no partition: Java's default partitioner places them by their original key.
    "partitioner": "murmur2_random",
    "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
}


def tally_schema() -> Any:
    from pyspark.sql import types as T

    return T.StructType([T.StructField("partition", T.IntegerType(), False),
                         T.StructField("tally", T.StringType(), False)])


@dataclass(frozen=True)
class TaskWrite:
    """What every write task needs: where to write, and which tasks a killed run of the same id completed."""

    config: Mapping[str, Any]
    run_id: str
    dlq_topic: str
    handoff_topic: str
    handoff_partitions: int
    stage_start: Mapping[int, int]
    """The hand-off topic's end offsets when the write stage began: where a retry looks for its marker."""
    done: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    """Tasks whose marker a killed run of this run id committed: they write nothing again."""


def write_tasks(plan: TaskWrite) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function over `transform.for_numbering`'s partitions."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None
        partition = context.partitionId()
        tally = plan.done.get(partition)
        if tally is None:
            tally = _write(plan, partition, batches)
        for _ in batches:  # a task an earlier attempt or run wrote drains its input unread
            pass
        yield pa.RecordBatch.from_pydict({"partition": [partition], "tally": [json.dumps(tally)]},
                                         schema=pa.schema([pa.field("partition", pa.int32(), False),
                                                           pa.field("tally", pa.string(), False)]))

    return run


def _write(plan: TaskWrite, partition: int, batches: Iterator[pa.RecordBatch]) -> dict[str, Any]:
    from confluent_kafka import Producer

    from kafka_rekey.services.handoff import committed_task, task_key, task_partition, transactional_id
    from kafka_rekey.shared.handoff import sequence_record

    producer = Producer({**plan.config, **PRODUCER_SETTINGS,
                         "transactional.id": transactional_id(plan.run_id, partition)})
    producer.init_transactions(60)
    # Every attempt looks: PySpark does not say whether a stage is a re-attempt, whose first task attempts are 0.
    committed = committed_task(plan.config, plan.handoff_topic, plan.handoff_partitions, plan.run_id, partition,
                               plan.stage_start)
    if committed is not None:
        return committed
    producer.begin_transaction()
    tally = transform.TaskTally()
    for row, kind, sequence in transform.number_sorted(transform.write_rows(batches)):
        tally.add(row, kind, sequence)
        record = transform.output_record(row, kind, sequence, plan.dlq_topic)
        if record is not None:
            _produce(producer, record.topic, record.key, record.value, record.partition, record.headers)
            if tally.written % 10_000 == 0:
                producer.poll(0)  # serve delivery reports as it goes, not all at the commit
    for (topic, key), last in tally.lasts.items():
        handoff_key, value = sequence_record(topic, key, last)
        _produce(producer, plan.handoff_topic, handoff_key, value)
    summary = tally.summary()
    marker = task_key(plan.run_id, partition)
    _produce(producer, plan.handoff_topic, marker, json.dumps(summary).encode(),
             task_partition(plan.run_id, partition, plan.handoff_partitions))
    producer.commit_transaction(120)
    return summary


def _produce(producer: Any, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
             headers: list[tuple[str, bytes]] | None = None) -> None:
    while True:
        try:
            producer.produce(topic, value, key, -1 if partition is None else partition, headers=headers)
            return
        except BufferError:  # the local queue is full: let librdkafka send some
            producer.poll(0.05)

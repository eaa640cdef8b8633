"""Has a consumer group drained its topics? Committed offsets against what is really left to read.

`rekey check` must only read the outputs once the ACL has processed everything: its group's committed offset
on every partition of the source topics and of the internal sequencing topic must be past the last record.
Comparing with the end offsets alone is wrong under exactly-once, where the end offset also counts the
transaction markers after the last record; so for a partition whose end is beyond the committed offset, a
read_committed consumer looks from the committed offset on: drained when it meets the end without a record.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafka_rekey.services.kafka.offsets import committed_offsets

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class GroupProgress:
    """Per partition: the group's committed offset (-1 when none) and the end offset, at one moment."""

    committed: dict[TopicPartitionKey, int] = field(default_factory=dict)
    end: dict[TopicPartitionKey, int] = field(default_factory=dict)

    def committed_total(self, topic: str | None = None) -> int:
        return sum(max(0, c) for (t, _), c in self.committed.items() if topic in (None, t))

    def end_total(self, topic: str | None = None) -> int:
        return sum(e for (t, _), e in self.end.items() if topic in (None, t))

    def behind(self) -> list[TopicPartitionKey]:
        """Partitions whose end is beyond the committed offset (records or only transaction markers)."""
        return [tp for tp, end in self.end.items() if end > max(0, self.committed.get(tp, -1))]


def _partitions(consumer: Consumer, topics: Iterable[str]) -> list[TopicPartitionKey]:
    found = []
    for topic in topics:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        if metadata.error is not None:
            raise RuntimeError(f"topic {topic}: {metadata.error}")
        found += [(topic, p) for p in sorted(metadata.partitions)]
    return found


def group_progress(config: dict[str, Any], group: str, topics: Iterable[str]) -> GroupProgress:
    """The committed offsets of `group` and the end offsets of every partition of `topics`, right now."""
    consumer = Consumer({**config, "group.id": f"rekey-probe-{uuid.uuid4()}", "enable.auto.commit": False})
    try:
        partitions = _partitions(consumer, topics)
        end = {(t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1] for t, p in partitions}
    finally:
        consumer.close()
    return GroupProgress(committed_offsets(config, group, partitions), end)


def records_past_committed(config: dict[str, Any], progress: GroupProgress, timeout: float = 5.0) -> list[str]:
    """Partitions holding at least one committed record at or after the group's committed offset."""
    behind = progress.behind()
    if not behind:
        return []
    consumer = Consumer({**config, "group.id": f"rekey-probe-{uuid.uuid4()}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
    pending: set[TopicPartitionKey] = set()
    open_partitions = set(behind)
    try:
        consumer.assign([TopicPartition(t, p, max(0, progress.committed.get((t, p), -1))) for t, p in behind])
        deadline = time.monotonic() + timeout
        while open_partitions and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                tp = (message.topic(), message.partition())
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    continue
                if error is None:
                    pending.add(tp)
                open_partitions.discard(tp)
    finally:
        consumer.close()
    # A partition that neither showed a record nor reached its end in time counts as not drained.
    return sorted(f"{t}/{p}" for t, p in pending | open_partitions)


FAR_BEHIND = 5_000
"""Records left beyond which a waiting probe slows down: it starts librdkafka clients of its own, CPU taken from
the workers being waited for during a full-scale run's tens of minutes."""


def poll_interval(records_left: int, near: float = 0.5) -> float:
    return near if records_left < FAR_BEHIND else 5.0


@dataclass(frozen=True)
class DrainResult:
    seconds: float
    progress: GroupProgress


def wait_drained(config: dict[str, Any], group: str, topics: Iterable[str], timeout: float,
                 settle: float = 2.5, on_poll: Callable[[GroupProgress], None] | None = None) -> DrainResult:
    """Wait until `group` has committed past every record of `topics` and nothing moved for `settle` seconds.

    Raises TimeoutError (naming the partitions still behind) at the deadline."""
    topics = list(topics)
    started = time.monotonic()
    deadline = started + timeout
    drained_since: float | None = None
    last_snapshot: dict[TopicPartitionKey, int] | None = None
    pending: list[str] = ["?"]
    while True:
        try:
            progress = group_progress(config, group, topics)
            if on_poll is not None:
                on_poll(progress)
            pending = records_past_committed(config, progress)
        except KafkaException as error:  # a broker restarting: not drained yet, ask again
            pending, drained_since = [f"probe failed: {error}"], None
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group} not drained after {timeout:.0f}s: {error}") from error
            time.sleep(0.5)
            continue
        snapshot = {**progress.end, **{("committed:" + t, p): c for (t, p), c in progress.committed.items()}}
        if pending:
            drained_since = None
        elif drained_since is None or snapshot != last_snapshot:
            drained_since = time.monotonic()
        elif time.monotonic() - drained_since >= settle:
            return DrainResult(time.monotonic() - started, progress)
        last_snapshot = snapshot
        if time.monotonic() > deadline:
            raise TimeoutError(f"group {group} not drained after {timeout:.0f}s; records left in {pending[:10]}")
        time.sleep(poll_interval(progress.end_total() - progress.committed_total()))

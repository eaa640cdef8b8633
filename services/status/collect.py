"""Read the cluster's state for `rekey status`: one snapshot of lag, dead letters, per-partition counts, the
catalog's drift and the backfills recorded in the hand-off checkpoint topic.

Lag is a group's committed offset against the end offset per partition (a group that never committed counts
from the partition's start). Dead letters are counted from the topic's offsets and the newest few are read for
their `dlq.reason` header. A domain topic's skew is its busiest partition against the mean partition. Drift is
what `rekey topics apply` would report (partitions, replication, configs). A backfill is `started`,
`data_written` (the live service must not start yet) or `complete` (handed off). The workers named are asked
for their readiness and restore progress (`services.status.workers`).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kafka_rekey.services.kafka.offsets import committed_offsets
from kafka_rekey.services.kafka.topics import describe_topics
from kafka_rekey.services.kafka.transient import LEADER_MOVING
from kafka_rekey.services.status.workers import WorkerState, worker_state
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.catalog.drift import Drift, topic_drift

NEWEST_DEAD_LETTERS = 20
_LEADER_MOVING = LEADER_MOVING | {KafkaError._TIMED_OUT}  # a list_offsets request can also time out meanwhile


@dataclass(frozen=True)
class GroupLag:
    group: str
    topic: str
    partitions: dict[int, int]
    """partition -> records behind"""
    committed: bool
    """False when the group has no committed offset on the topic (never ran, or another group id)."""

    @property
    def total(self) -> int:
        return sum(self.partitions.values())


@dataclass(frozen=True)
class TopicSkew:
    topic: str
    records: dict[int, int]

    @property
    def skew(self) -> float:
        counts = list(self.records.values())
        mean = sum(counts) / len(counts) if counts else 0
        return max(counts) / mean if mean else 0.0


@dataclass(frozen=True)
class Backfill:
    """One backfill run as its hand-off checkpoint record says."""

    source: str
    family: str
    state: str
    run_id: str
    started_at: float
    finished_at: float | None
    written: int | None


@dataclass(frozen=True)
class Status:
    lag: list[GroupLag]
    dead_letters: int
    dead_letter_reasons: dict[str, int]
    skew: list[TopicSkew]
    drift: list[Drift] = field(default_factory=list)
    backfills: list[Backfill] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    workers: list[WorkerState] = field(default_factory=list)
    migrations: list[dict[str, Any]] = field(default_factory=list)
    """Consumer-group migrations (`rekey migrate`): group, family, sources, step."""

    def as_json(self) -> dict[str, Any]:
        return {
            "lag": [{**asdict(g), "total": g.total} for g in self.lag],
            "dead_letters": {"count": self.dead_letters, "newest_reasons": self.dead_letter_reasons},
            "skew": [{**asdict(s), "skew": round(s.skew, 2)} for s in self.skew],
            "drift": [asdict(d) for d in self.drift],
            "backfills": [asdict(b) for b in self.backfills],
            "notes": self.notes,
            "workers": [asdict(w) for w in self.workers],
            "migrations": self.migrations,
        }


def service_groups(catalog: Catalog, acl_group: str, projection_group: str,
                   sink: tuple[str, str] | None) -> dict[str, list[str]]:
    """Which group reads which topics: the ACL reads the sources and its sequencing topic, the projection the
    families' topics, the sink its one topic (`sink` = (group, topic))."""
    groups = {
        acl_group: [s.name for s in catalog.sources] + [f"{acl_group}-sequencing"],
        projection_group: [t for f in catalog.families.values() for t in f.output_topics],
    }
    if sink is not None:
        groups[sink[0]] = [sink[1]]
    return groups


def collect(config: dict[str, Any], catalog: Catalog, groups: dict[str, list[str]], workers: Sequence[str] = ()
            ) -> Status:
    family_topics = list(dict.fromkeys(t for f in catalog.families.values() for t in f.output_topics))
    wanted = {t for topics in groups.values() for t in topics} | set(family_topics) | {catalog.dlq_topic}
    with AdminClient(config) as admin:  # closed here, not by the garbage collector on a librdkafka thread
        existing = set(admin.list_topics(timeout=10).topics)
        partitions = _partitions(admin, sorted(wanted & existing))
        starts = _offsets(admin, partitions, OffsetSpec.earliest())
        ends = _offsets(admin, partitions, OffsetSpec.latest())
        drift = catalog_drift(admin, catalog)
    lag = [_group_lag(config, group, topic, partitions, starts, ends)
           for group, topics in groups.items() for topic in topics if topic in existing]
    dlq = [tp for tp in partitions if tp[0] == catalog.dlq_topic]
    dead_letters = sum(ends[tp] - starts[tp] for tp in dlq)
    reasons = _newest_reasons(config, dlq, starts, ends) if dead_letters else {}
    skew = [TopicSkew(t, {p: ends[(t, p)] - starts[(t, p)] for (tt, p) in partitions if tt == t})
            for t in family_topics if t in existing]
    runs = backfills(config, catalog.checkpoint_topic) if catalog.checkpoint_topic in existing else []
    notes = [f"topic {topic} does not exist" for topic in sorted(wanted - existing)]
    moves = migrations(config, catalog.migrations_topic) if catalog.migrations_topic in existing else []
    return Status(lag, dead_letters, reasons, skew, drift, runs, notes, [worker_state(w) for w in workers], moves)


def migrations(config: dict[str, Any], topic: str) -> list[dict[str, Any]]:
    from kafka_rekey.services.migration.records import read_migrations

    return [{"group": m.group, "family": m.family, "sources": m.sources, "step": m.step}
            for m in sorted(read_migrations(config, topic).migrations.values(), key=lambda m: (m.family, m.group))]


def catalog_drift(admin: AdminClient, catalog: Catalog) -> list[Drift]:
    """How the cluster's topics differ from the catalog (topics that do not exist are noted apart)."""
    specs = catalog.provisioned_topics()
    observed = describe_topics(admin, [spec.name for spec in specs])
    return [drift for spec in specs if spec.name in observed for drift in topic_drift(spec, observed[spec.name])]


def backfills(config: dict[str, Any], checkpoint_topic: str) -> list[Backfill]:
    from kafka_rekey.services.handoff import read_runs

    runs = read_runs(config, checkpoint_topic).values()
    return [Backfill(run.source, run.family, run.state, run.run_id, run.started_at, run.finished_at,
                     run.summary.get("written")) for run in sorted(runs, key=lambda r: r.started_at)]


def _partitions(admin: AdminClient, topics: list[str]) -> list[tuple[str, int]]:
    metadata = admin.list_topics(timeout=10).topics
    return [(t, p) for t in topics for p in sorted(metadata[t].partitions)]


def _offsets(admin: AdminClient, partitions: list[tuple[str, int]], spec: OffsetSpec,
             patience: float = 15.0) -> dict[tuple[str, int], int]:
    """Offsets per partition; a partition whose leader is moving is asked again for up to `patience` seconds."""
    found: dict[tuple[str, int], int] = {}
    pending = list(partitions)
    deadline = time.monotonic() + patience
    while pending:
        futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in pending}, request_timeout=15)
        retry = []
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = future.result(20).offset
            except KafkaException as error:
                if error.args[0].code() not in _LEADER_MOVING or time.monotonic() > deadline:
                    raise
                retry.append((tp.topic, tp.partition))
        pending = retry
        if pending:
            time.sleep(0.2)  # a leader election takes this long at least
    return found


def _group_lag(config: dict[str, Any], group: str, topic: str, partitions: list[tuple[str, int]],
               starts: dict[tuple[str, int], int], ends: dict[tuple[str, int], int]) -> GroupLag:
    mine = [(t, p) for t, p in partitions if t == topic]
    committed = {p: offset for (_, p), offset in committed_offsets(config, group, mine).items() if offset >= 0}
    behind = {p: ends[(topic, p)] - committed.get(p, starts[(topic, p)]) for _, p in mine}
    return GroupLag(group, topic, behind, bool(committed))


def _newest_reasons(config: dict[str, Any], partitions: list[tuple[str, int]], starts: dict[tuple[str, int], int],
                    ends: dict[tuple[str, int], int]) -> dict[str, int]:
    """`dlq.reason` of the newest dead letters, counted."""
    consumer = Consumer({**config, "group.id": f"rekey-status-{uuid.uuid4()}", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    reasons: Counter[str] = Counter()
    try:
        assignment = [TopicPartition(t, p, max(starts[(t, p)], ends[(t, p)] - NEWEST_DEAD_LETTERS))
                      for t, p in partitions if ends[(t, p)] > starts[(t, p)]]
        consumer.assign(assignment)
        open_partitions = {(tp.topic, tp.partition) for tp in assignment}
        idle = 0
        while open_partitions and idle < 10:
            messages = consumer.consume(500, timeout=1.0)
            idle = 0 if messages else idle + 1
            for message in messages:
                if message.error() is not None:
                    open_partitions.discard((message.topic(), message.partition()))
                    continue
                reason = dict(message.headers() or []).get("dlq.reason") or b"?"
                reasons[reason.decode(errors="replace") if isinstance(reason, bytes) else reason] += 1
    finally:
        consumer.close()
    return dict(reasons.most_common())

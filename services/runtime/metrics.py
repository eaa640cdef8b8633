"""Prometheus metrics of the live services. Labels stay bounded: per-org counts only for the top N orgs."""

from __future__ import annotations

from collections import Counter as Tally

from confluent_kafka import Consumer
from prometheus_client import Counter, Gauge, Histogram

CONSUMED = Counter("rekey_consumed_total", "Source records consumed.", ["service", "topic"])
PRODUCED = Counter("rekey_produced_total", "Records produced to output topics.", ["service", "topic"])
DEAD_LETTERED = Counter("rekey_dead_lettered_total", "Records sent to the dead-letter topic.", ["service", "reason"])
SKIPPED = Counter("rekey_skipped_total", "Records explicitly skipped (tombstones, duplicates).", ["service", "reason"])
ORG_RECORDS = Gauge("rekey_org_records", "Records seen for the top N orgs by volume.", ["org"])
CHECKPOINT_SECONDS = Histogram(
    "rekey_checkpoint_seconds", "Duration of a checkpoint (changelog, flush or transaction commit, offsets, stores).",
    ["service"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
CONSUMER_LAG = Gauge("rekey_consumer_lag", "High watermark minus position.", ["service", "topic", "partition"])
CHECKPOINT_FAILURES = Counter(
    "rekey_checkpoint_failures_total", "Checkpoints that failed, their uncommitted work redone, by reason: "
    "commit_failed (outputs, changelog, transaction or offsets not committed, or the group left), producer_stuck "
    "(a transactional call past its deadline), producer_fatal (the producer failed for good, e.g. fenced).",
    ["service", "reason"],
)


GAUGES_EVERY = 5.0
"""How often a consumer's lag is exported: its watermarks are librdkafka's cached ones, refreshed by fetches."""


def export_consumer_lag(consumer: Consumer, service: str) -> None:
    """`rekey_consumer_lag` of every partition assigned to `consumer`: its high watermark minus its position."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.position(assignment):
        _low, high = consumer.get_watermark_offsets(tp, cached=True)
        if high is None or high < 0 or tp.offset < 0:
            continue
        CONSUMER_LAG.labels(service, tp.topic, str(tp.partition)).set(max(0, high - tp.offset))


ORG_EXPORT_INTERVAL_S = 5.0
"""How often `TopOrgs.export_due` ranks the orgs: ranking all of them is too much for every batch."""


class TopOrgs:
    """Counts records per org and exports only the current top N to `rekey_org_records`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.counts: Tally[str] = Tally()
        self.exported: set[str] = set()
        self.next_export = 0.0

    def add(self, org_id: str) -> None:
        self.counts[org_id] += 1

    def export_due(self, now: float) -> None:
        """`export`, unless it ran less than `ORG_EXPORT_INTERVAL_S` before `now` (`time.monotonic()`)."""
        if now >= self.next_export:
            self.next_export = now + ORG_EXPORT_INTERVAL_S
            self.export()

    def export(self) -> None:
        top = dict(self.counts.most_common(self.size))
        for org in self.exported - top.keys():
            ORG_RECORDS.remove(org)
        for org, count in top.items():
            ORG_RECORDS.labels(org).set(count)
        self.exported = set(top)

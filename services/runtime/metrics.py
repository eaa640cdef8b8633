"""Prometheus metrics of the live services. Labels stay bounded: per-org counts only for the top N orgs."""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import Counter, Gauge

CONSUMED = Counter("rekey_consumed_total", "Source records consumed.", ["service", "topic"])
PRODUCED = Counter("rekey_produced_total", "Records produced to output topics.", ["service", "topic"])
DEAD_LETTERED = Counter("rekey_dead_lettered_total", "Records sent to the dead-letter topic.", ["service", "reason"])
SKIPPED = Counter("rekey_skipped_total", "Records explicitly skipped (tombstones, duplicates).", ["service", "reason"])
OUTPUT_PARTITION = Counter(
    "rekey_output_partition_records_total", "Records per output partition (skew).", ["topic", "partition"]
)
ORG_RECORDS = Gauge("rekey_org_records", "Records seen for the top N orgs by volume.", ["org"])
REFETCHED = Counter(
    "rekey_refetched_partitions_total", "Times a partition was sought back because the fetcher skipped records.",
    ["topic"],
)
CONSUMER_LAG = Gauge("rekey_consumer_lag", "High watermark minus position.", ["service", "topic", "partition"])


class TopOrgs:
    """Counts records per org and exports only the current top N to `rekey_org_records`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.counts: Tally[str] = Tally()
        self.exported: set[str] = set()

    def add(self, org_id: str) -> None:
        self.counts[org_id] += 1

    def export(self) -> None:
        top = dict(self.counts.most_common(self.size))
        for org in self.exported - top.keys():
            ORG_RECORDS.remove(org)
        for org, count in top.items():
            ORG_RECORDS.labels(org).set(count)
        self.exported = set(top)


def export_consumer_lag(app: object, service: str) -> None:
    """Set `rekey_consumer_lag` for every assigned partition of a faust app: high watermark - committed."""
    consumer = app.consumer  # type: ignore[attr-defined]
    committed = app.monitor.tp_committed_offsets  # type: ignore[attr-defined]
    for tp in consumer.assignment():
        highwater = consumer.highwater(tp)
        if highwater is None:
            continue
        lag = max(0, highwater - committed.get(tp, 0))
        CONSUMER_LAG.labels(service, tp.topic, str(tp.partition)).set(lag)

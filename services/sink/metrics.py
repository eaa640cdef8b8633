"""Prometheus metrics of the sink, labelled by table, in the registry given: `rekey run sink` serves the process's
default one (with its process metrics and consumer lag); without one, a registry of their own (one sink per
registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kafka_rekey.shared.sink.plan import BatchPlan, Correction, Outcome
from kafka_rekey.shared.sink.reorder import Gap


class SinkMetrics:
    def __init__(self, table: str, registry: CollectorRegistry | None = None) -> None:
        self.table = table
        self.registry = registry or CollectorRegistry()
        labels = ["table"]
        self.applied = Counter("rekey_sink_applied_total", "Events that moved their table row forward.",
                               labels, registry=self.registry).labels(table)
        self._ignored = Counter(
            "rekey_sink_ignored_total", "Events that did not change the table row: stale (older or equal "
            "version, kept in the history) or duplicate (already stored).", [*labels, "reason"],
            registry=self.registry)
        self._corrections = Counter("rekey_sink_corrections_total", "Events written to the corrections table.",
                                    [*labels, "reason"], registry=self.registry)
        self.rewritten = Counter("rekey_sink_rewritten_total", "History rows rewritten by a reconciliation repair.",
                                 labels, registry=self.registry).labels(table)
        self.rejected = Counter("rekey_sink_rejected_total", "Records that are not usable domain events (kept in "
                                "the rejected table).", labels, registry=self.registry).labels(table)
        self._gaps = Counter("rekey_sink_gaps_released_total", "Keys released by the reorder buffer with "
                             "sequences missing.", [*labels, "reason"], registry=self.registry)
        self.batch_seconds = Histogram("rekey_sink_batch_seconds", "Time to plan and commit one batch.", labels,
                                       registry=self.registry).labels(table)
        self.held = Gauge("rekey_sink_reorder_held_events", "Events held by the reorder buffer.", labels,
                          registry=self.registry).labels(table)
        self.watermark = Gauge("rekey_sink_watermark_ms", "Event time (epoch ms) the table is complete up to.",
                               labels, registry=self.registry).labels(table)

    def record(self, plan: BatchPlan) -> None:
        self.applied.inc(plan.outcomes[Outcome.APPLIED])
        self.rewritten.inc(plan.outcomes[Outcome.REWRITTEN])
        self._ignored.labels(self.table, "stale").inc(plan.outcomes[Outcome.STALE])
        self._ignored.labels(self.table, "duplicate").inc(plan.outcomes[Outcome.DUPLICATE])
        for correction in plan.corrections:
            self.correction(correction)
        if plan.watermark.safe_up_to is not None:
            self.watermark.set(plan.watermark.safe_up_to)

    def correction(self, correction: Correction) -> None:
        self._corrections.labels(self.table, correction.reason.value).inc()

    def gap(self, gap: Gap) -> None:
        self._gaps.labels(self.table, gap.reason.value).inc()

    def value(self, name: str, **labels: str) -> float:
        """Current value of a sample (for probes and tests), 0 when it has not been exported yet."""
        return self.registry.get_sample_value(name, {"table": self.table, **labels}) or 0.0

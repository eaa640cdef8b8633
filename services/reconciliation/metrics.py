"""Prometheus metrics of the reconciler, in a registry of their own."""

from __future__ import annotations

import time
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge

from kafka_rekey.shared.reconciliation.audit import CHECKS, Mismatch


class ReconcilerMetrics:
    def __init__(self, table: str, registry: CollectorRegistry | None = None) -> None:
        self.table = table
        self.registry = registry or CollectorRegistry()
        self.runs = Counter("rekey_reconciliation_runs_total", "Audits run.", ["table"],
                            registry=self.registry).labels(table)
        self._mismatches = Counter("rekey_reconciliation_mismatches_total", "Mismatching (org, window) found.",
                                   ["table", "check"], registry=self.registry)
        self._unrepaired = Gauge("rekey_reconciliation_unrepaired_windows", "Mismatching (org, window) left "
                                 "after the last audit (and repair).", ["table", "check"], registry=self.registry)
        self.last_run = Gauge("rekey_reconciliation_last_run_timestamp_seconds", "When the last audit finished.",
                              ["table"], registry=self.registry).labels(table)

    def record(self, found: Sequence[Mismatch], remaining: Sequence[Mismatch]) -> None:
        self.runs.inc()
        for mismatch in found:
            self._mismatches.labels(self.table, mismatch.check).inc()
        for check in CHECKS:
            self._unrepaired.labels(self.table, check).set(sum(1 for m in remaining if m.check == check))
        self.last_run.set(time.time())

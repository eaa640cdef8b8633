"""The windowed audit of source topic -> domain topic -> sink, and the rewind that repairs the sink.

Checks, each per org and event-time window (`shared.reconciliation.audit`):
- `source_vs_domain` (when a source topic is given): the source records the translator turns into events for
  this domain topic, against the domain events that name that source topic; key fields (org, interaction,
  event id). Not repairable here: the live path (or a backfill) must re-process the source.
- `domain_vs_sink`: the domain topic against the sink's history plus corrections; key fields (org,
  interaction, event id, sequence, event type, event time). Repair: re-apply the window's domain events in
  repair mode (idempotent; corrections stay corrections) and rebuild the touched table rows.
- `history_vs_table`: the rows the history implies (`derive_state`) against the table rows, including the
  event count. Repair: rebuild the window's rows from the history.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from kafka_rekey.services.reconciliation.metrics import ReconcilerMetrics
from kafka_rekey.services.reconciliation.settings import ReconcilerSettings
from kafka_rekey.services.reconciliation.topics import TopicRecord, read_to_end
from kafka_rekey.services.sink.store import SinkStore
from kafka_rekey.shared.reconciliation.audit import (
    DOMAIN_VS_SINK,
    HISTORY_VS_TABLE,
    SOURCE_KEY_FIELDS,
    SOURCE_VS_DOMAIN,
    AuditRecord,
    Mismatch,
    compare,
    digest_windows,
    event_record,
    in_window,
    state_record,
    window_start,
)
from kafka_rekey.shared.sink.events import Interaction, SinkEvent, event_from_record
from kafka_rekey.shared.sink.plan import plan_batch
from kafka_rekey.shared.sink.state import StateRow, derive_state
from kafka_rekey.shared.sink.watermark import Watermark

REPAIR_CHUNK = 2000

Decode = Callable[[bytes], Any]
SourceAudit = Callable[[Sequence[TopicRecord]], list[AuditRecord]]
"""Turns the source topic's records into the audit records expected on the domain topic."""
Publish = Callable[[Sequence[Mismatch], set[tuple[str, str, int]], int], None]


@dataclass(frozen=True, slots=True)
class SourceSide:
    topic: str
    expected: SourceAudit


@dataclass(slots=True)
class Audit:
    mismatches: list[Mismatch]
    domain: list[SinkEvent]
    table: dict[Interaction, StateRow]
    derived: dict[Interaction, StateRow]
    windows: int
    undecodable: int


@dataclass(slots=True)
class Report:
    found: list[Mismatch]
    remaining: list[Mismatch] = field(default_factory=list)
    windows: int = 0
    undecodable: int = 0
    rewritten: int = 0
    rebuilt_rows: int = 0

    def is_repaired(self, mismatch: Mismatch) -> bool:
        return _identity(mismatch) not in {_identity(m) for m in self.remaining}

    @property
    def clean(self) -> bool:
        return not self.remaining


def _identity(mismatch: Mismatch) -> tuple[str, str, int]:
    return (mismatch.check, mismatch.org_id, mismatch.window_start)


class Reconciler:
    def __init__(self, settings: ReconcilerSettings, store: SinkStore, decode: Decode,
                 source: SourceSide | None = None, publish: Publish | None = None,
                 metrics: ReconcilerMetrics | None = None) -> None:
        self.settings = settings
        self.topic = settings.require_topic()
        self.store = store
        self.decode = decode
        self.source = source
        self.publish = publish
        self.metrics = metrics or ReconcilerMetrics(store.table)
        self.window_ms = settings.reconcile.window_s * 1000
        self.log = structlog.get_logger().bind(service="reconciler", topic=self.topic, table=store.table)

    def run(self, since: int | None = None, until: int | None = None, repair: bool = False) -> Report:
        """Audit [since, until); with `repair`, rewind what the sink can fix and audit again; publish findings."""
        first = self.audit(since, until)
        report = Report(first.mismatches, first.mismatches, first.windows, first.undecodable)
        if repair and first.mismatches:
            report.rewritten, report.rebuilt_rows = self.repair(first)
            report.remaining = self.audit(since, until).mismatches
        self.metrics.record(report.found, report.remaining)
        if self.publish is not None and report.found:
            repaired = {_identity(m) for m in report.found if report.is_repaired(m)}
            self.publish(report.found, repaired, int(time.time() * 1000))
        for mismatch in report.found:
            self.log.warning("reconciliation mismatch", check=mismatch.check, org_id=mismatch.org_id,
                             window_start=mismatch.window_start, left=mismatch.left.count,
                             right=mismatch.right.count, repaired=report.is_repaired(mismatch))
        return report

    def audit(self, since: int | None, until: int | None) -> Audit:
        domain, undecodable = self._domain_events()
        domain = [e for e in domain if in_window(e.event_time, since, until)]
        mismatches: list[Mismatch] = []
        windows: set[tuple[str, int]] = set()

        def check(name: str, left_name: str, left: list[AuditRecord], right_name: str,
                  right: list[AuditRecord]) -> None:
            left_digest, right_digest = digest_windows(left, self.window_ms), digest_windows(right, self.window_ms)
            windows.update(left_digest, right_digest)
            mismatches.extend(compare(name, left_name, left_digest, right_name, right_digest, self.window_ms))

        if self.source is not None:
            expected = [r for r in self.source.expected(read_to_end(
                self.settings.kafka, self.source.topic, self.settings.reconcile.read_timeout_s))
                if in_window(r.event_time, since, until)]
            named = [event_record(e, SOURCE_KEY_FIELDS) for e in domain if e.source.topic == self.source.topic]
            check(SOURCE_VS_DOMAIN, "source", expected, "domain", named)
        history = self.store.history(since, until)
        sink = [*history, *self.store.corrections(since, until)]
        check(DOMAIN_VS_SINK, "domain", [event_record(e) for e in domain], "sink", [event_record(e) for e in sink])
        table = self.store.state(since, until)
        interactions = set(table) | {e.interaction for e in history}
        derived = {i: row for i, row in derive_state(self.store.history_of(interactions)).items()
                   if in_window(row.latest.event_time, since, until)}
        check(HISTORY_VS_TABLE, "history", [state_record(r) for r in derived.values()],
              "table", [state_record(r) for r in table.values()])
        return Audit(mismatches, domain, table, derived, len(windows), undecodable)

    def _domain_events(self) -> tuple[list[SinkEvent], int]:
        events: list[SinkEvent] = []
        undecodable = 0
        for record in read_to_end(self.settings.kafka, self.topic, self.settings.reconcile.read_timeout_s):
            try:
                if record.value is None:
                    raise ValueError("tombstone")
                events.append(event_from_record(self.decode(record.value),
                                                record.key.decode() if record.key else ""))
            except ValueError:  # kept in the sink's rejected table, not an event to audit
                undecodable += 1
        return events, undecodable

    def repair(self, audit: Audit) -> tuple[int, int]:
        """Rewind: re-apply the mismatching windows' domain events and rebuild rows; (rewritten, rebuilt rows)."""
        def windows(check: str) -> set[tuple[str, int]]:
            return {(m.org_id, m.window_start) for m in audit.mismatches if m.check == check}

        def window_of(event: SinkEvent) -> tuple[str, int]:
            return (event.org_id, window_start(event.event_time, self.window_ms))

        rewind = windows(DOMAIN_VS_SINK)
        events = [e for e in audit.domain if window_of(e) in rewind]
        rewritten = 0
        for start in range(0, len(events), REPAIR_CHUNK):
            chunk = events[start:start + REPAIR_CHUNK]
            plan = plan_batch(chunk, self.store.stored(chunk), Watermark(None), repair=True)
            self.store.apply(plan)
            rewritten += len(plan.history)
        rebuild = windows(HISTORY_VS_TABLE)
        rows = {i for i, row in (*audit.table.items(), *audit.derived.items()) if window_of(row.latest) in rebuild}
        if rows:
            self.store.rebuild_state(rows)
        self.log.info("rewind applied", windows=len(rewind), events=rewritten, rebuilt_rows=len(rows))
        return rewritten, len(rows)

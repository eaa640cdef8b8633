"""Wire the reconciler from settings, and run it as a service (`run_reconciler`): audit every interval."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Sequence

import structlog

from kafka_rekey.services.observability.http import HealthServer
from kafka_rekey.services.observability.logs import configure_logging
from kafka_rekey.services.reconciliation.metrics import ReconcilerMetrics
from kafka_rekey.services.reconciliation.publisher import ReconciliationPublisher
from kafka_rekey.services.reconciliation.reconciler import Reconciler, SourceSide
from kafka_rekey.services.reconciliation.settings import ReconcilerSettings
from kafka_rekey.services.reconciliation.topics import TopicRecord
from kafka_rekey.services.sink.databases import open_store
from kafka_rekey.services.sink.service import domain_decoder
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.reconciliation.audit import AuditRecord, window_start
from kafka_rekey.shared.reconciliation.source import expected_on_domain, source_spec
from kafka_rekey.shared.translation import SourceRecord

SERVICE = "reconciler"


def _source_side(catalog: Catalog, source_topic: str, domain_topic: str) -> SourceSide:
    spec = source_spec(catalog, source_topic)

    def expected(records: Sequence[TopicRecord]) -> list[AuditRecord]:
        return expected_on_domain(
            (SourceRecord(r.topic, r.partition, r.offset, r.key, r.value, r.headers, r.timestamp_ms)
             for r in records), catalog, spec, domain_topic)

    return SourceSide(source_topic, expected)


def build_reconciler(settings: ReconcilerSettings, metrics: ReconcilerMetrics | None = None) -> Reconciler:
    """The reconciler for `settings`: the sink's store and decoder, the catalog's source and reconciliation
    topic (the catalog is needed only for a source check or publishing)."""
    from kafka_rekey.services.catalog_files import load_catalog

    options = settings.reconcile
    topic = settings.require_topic()
    catalog = load_catalog(settings.catalog_path) if options.source_topic or options.emit else None
    source = _source_side(catalog, options.source_topic, topic) if catalog and options.source_topic else None
    publish = None
    if catalog is not None and options.emit:
        reconciliation_topic = catalog.reconciliation_topic
        publish = ReconciliationPublisher(settings.kafka, settings.registry, reconciliation_topic,
                                          catalog.topic(reconciliation_topic).schema_subject)
    store = open_store(settings.database_url, settings.sink.table)
    store.ensure_schema()
    return Reconciler(settings, store, domain_decoder(settings), source, publish, metrics)


def run_reconciler(settings: ReconcilerSettings | None = None) -> None:
    """Audit (and, with REKEY_RECONCILE_REPAIR, repair) every `interval_s` until SIGTERM/SIGINT, serving
    /healthz, /readyz and /metrics on `settings.web_port`."""
    settings = settings or ReconcilerSettings()
    configure_logging(SERVICE, settings.log_level, settings.log_format)
    log = structlog.get_logger().bind(service=SERVICE)
    options = settings.reconcile
    metrics = ReconcilerMetrics(settings.sink.table)
    reconciler = build_reconciler(settings, metrics)
    window_ms = options.window_s * 1000
    last_run = [time.monotonic()]
    http = HealthServer(
        settings.web_port, metrics.registry, ready=lambda: True,
        live=lambda: time.monotonic() - last_run[0] < 3 * options.interval_s + options.read_timeout_s,
    ).start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        while not stop.is_set():
            now_ms = int(time.time() * 1000)
            until = window_start(now_ms - int(options.settle_s * 1000), window_ms)
            since = window_start(until - int(options.lookback_s * 1000), window_ms) if options.lookback_s else None
            report = reconciler.run(since, until, repair=options.repair)
            log.info("audit finished", windows=report.windows, mismatches=len(report.found),
                     unrepaired=len(report.remaining))
            last_run[0] = time.monotonic()
            stop.wait(options.interval_s)
    finally:
        http.stop()
        reconciler.store.close()

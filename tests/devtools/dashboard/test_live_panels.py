"""Every panel of the chart's dashboard gets series from a real Prometheus scraping a real ACL worker with the
target labels the chart's ServiceMonitor gives it, except the checkpoint failures of a healthy worker: the queries
run as written, their variables substituted, and the labels they group and select by exist after the scrape."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.dashboard.prometheus import PrometheusServer
from kafka_rekey_dev.dashboard.run import SCRAPE_SECONDS, load_dashboard, query_panels, target_labels
from kafka_rekey_dev.embedded.maven import REPO_ROOT
from kafka_rekey_dev.embedded.workers import ServiceProcess

pytestmark = pytest.mark.broker

FAILURES_ONLY = "Checkpoint failures by reason (uncommitted work redone)"


def test_every_panel_but_the_failures_has_series_from_prometheus_scraping_a_live_worker(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path,
) -> None:
    dashboard = load_dashboard(REPO_ROOT / "helm" / "rekey" / "dashboards" / "rekey.json")
    catalog_path, catalog = provisioned_catalog
    env = {"REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REKEY_REGISTRY_URL": schema_registry_url,
           "REKEY_CATALOG_PATH": str(catalog_path), "REKEY_STATE_STORE": "memory",
           "REKEY_DATA_DIR": str(tmp_path / "state"), "REKEY_APP_ID": f"rekey-acl-{uuid.uuid4().hex[:8]}",
           "REKEY_INTERNAL_PARTITIONS": "4", "REKEY_COMMIT_INTERVAL_MS": "500"}
    acl = ServiceProcess("acl", env, tmp_path).start()
    prometheus = PrometheusServer(tmp_path / "prometheus", SCRAPE_SECONDS)
    try:
        prometheus.start([(f"127.0.0.1:{acl.port}", target_labels("acl"))])
        start = time.time()
        generate_to_topic(kafka_bootstrap, catalog.sources[0].name, 1_500, 12, malformed_rate=0.05,
                          duplicate_rate=0.05, seed=7)

        def empty_panels() -> list[str]:
            results = query_panels(prometheus, dashboard.panels, start, time.time())
            return [result.panel.title for result in results if not result.series]

        deadline = time.monotonic() + 60
        while (empty := empty_panels()) != [FAILURES_ONLY] and time.monotonic() < deadline:
            time.sleep(1)  # a scrape every second; each try runs every panel's queries
        assert empty == [FAILURES_ONLY]
    finally:
        prometheus.stop()
        acl.stop()

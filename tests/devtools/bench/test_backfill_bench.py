"""`rekey bench backfill`'s live ACL row on a real broker, registry and `rekey run acl`: every source record is
accounted for (written once, or dead-lettered, or dropped as a redelivery), and the figures of the ACL's process
tree reach the bench's table and JSON line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from rich.console import Console

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.generation import generate_to_topic
from kafka_rekey.services.kafka.topics import create_topics
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey_dev.bench.acl import one_family_catalog
from kafka_rekey_dev.bench.backfill import REPO_CATALOG, BenchOutcome, live_acl_run

pytestmark = [pytest.mark.broker, pytest.mark.registry]


def test_the_live_acl_row_accounts_for_every_record_and_measures_the_acl_process_tree(
    catalog_factory, kafka_admin: AdminClient, kafka_bootstrap: str, schema_registry_url: str,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    template, family = one_family_catalog(REPO_CATALOG, tmp_path)
    path = catalog_factory(template)
    catalog = load_catalog(path)
    create_topics(kafka_admin, catalog.provisioned_topics())
    source = next(s.name for s in catalog.sources if s.format == "ccaas-json")
    summary = generate_to_topic(kafka_bootstrap, source, 3000, 20, hot_orgs=("org-acme",), malformed_rate=0.01,
                                duplicate_rate=0.02, seed=11)

    run = live_acl_run(KafkaSettings(bootstrap_servers=kafka_bootstrap), RegistrySettings(url=schema_registry_url),
                       path, source, family, tmp_path)

    assert run.records == summary.records
    assert run.written == summary.events  # each first delivery once, its redeliveries dropped
    assert run.dead_letters == sum(summary.malformed.values()) > 0
    assert run.seconds > 0 and run.cpu_seconds > 0

    outcome = BenchOutcome(run.records, 10.0, 1.0, 5.0, run.records, run.records, 2, "local[*]", run,
                           spark_cpu_seconds=2 * run.cpu_seconds)
    line = outcome.to_json()
    assert line["acl_cpu_us_per_event"] == round(run.cpu_seconds * 1e6 / run.records, 1)
    assert line["acl_records_per_s"] == round(run.records / run.seconds, 1)
    console = Console(record=True, width=10_000)
    console.print(outcome.table())
    text = console.export_text()
    assert "live ACL (rekey run acl)" in text and "2.00x" in text  # the CPU ratio: Spark at twice the ACL
    assert json.loads(text.strip().splitlines()[-1])["acl_cpu_us_per_event"] == line["acl_cpu_us_per_event"]

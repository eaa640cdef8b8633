"""A backfill of the real Debezium connector's topic while the connector keeps streaming, then the hand-off to the
live ACL: every committed row change is one domain event, in commit order per interaction, numbered 1..n across
the seam, and a delete the live ACL reads of a row whose earlier changes only the backfill read (the default
replica identity: the delete carries only the primary key) is numbered under its interaction."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.fixtures.connect import DebeziumConnector
from tests.support.crm import CrmTable, assert_each_change_once_in_order, cdc_catalog, wait_domain_events
from tests.support.kafka import end_offsets, read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.postgres, pytest.mark.connect]

FAMILY = "interaction_events"
HISTORY_ROWS = 1500


def test_a_backfill_of_the_connectors_topic_hands_off_to_the_live_acl_with_a_dense_seam(
    spark, crm_table: CrmTable, debezium_connector: Callable[..., DebeziumConnector],  # type: ignore[no-untyped-def]
    catalog_factory: Callable[..., Path], kafka_admin: AdminClient, kafka_bootstrap: str, schema_registry_url: str,
    tmp_path: Path,
) -> None:
    prefix = f"crm{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}.public.{crm_table.name}"
    path, catalog = cdc_catalog(catalog_factory, kafka_admin, topic)
    history = crm_table.insert(HISTORY_ROWS, op="r")
    debezium_connector([f"public.{crm_table.name}"], topic_prefix=prefix)
    wait_until(lambda: sum(end_offsets(kafka_bootstrap, topic).values()) >= HISTORY_ROWS, 60,
               f"the connector's snapshot of {HISTORY_ROWS} rows")

    # The connector keeps streaming while the backfill reads: what lands past the backfill's snapshot of the topic
    # is the live service's.
    def stream() -> None:
        for start in range(0, 400, 20):
            crm_table.update_status(history[start:start + 20], "active")

    streaming = threading.Thread(target=stream)
    streaming.start()
    try:
        report = run_backfill(spark, BackfillRequest([topic], FAMILY, path),
                              KafkaSettings(bootstrap_servers=kafka_bootstrap),
                              RegistrySettings(url=schema_registry_url))
    finally:
        streaming.join(60)
    assert report.written >= HISTORY_ROWS

    live = crm_table.insert(100)
    crm_table.update_status(history[400:500] + live[:50], "transferred")
    crm_table.delete(history[:60] + live[50:70])  # the history's rows: their ids only in what the backfill read

    acl = ServiceProcess("acl", acl_env(kafka_bootstrap, schema_registry_url, path, tmp_path / "state"),
                         tmp_path).start()
    try:
        events = wait_domain_events(kafka_bootstrap, catalog, crm_table)
        dead_lettered = acl.metric("rekey_dead_lettered_total", service="acl")
    finally:
        acl.stop()
    assert_each_change_once_in_order(crm_table, events, exactly_once=True)
    assert dead_lettered == 0
    assert read_topic(kafka_bootstrap, catalog.dlq_topic) == []

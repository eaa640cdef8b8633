"""The live ACL fed by Debezium's PostgreSQL connector in Kafka Connect: a CRM table with a surrogate key, its
snapshot then a streamed workload (updates leaving a TOASTed column unchanged, a multi-row transaction, deletes
under the default replica identity), the ACL killed in the middle of the snapshot, and the Connect worker killed
mid-stream: every committed row change is exactly one domain event, in commit order per interaction, with dense
sequences, and nothing is dead-lettered."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from kafka_rekey.shared.translation.connect_values import UNAVAILABLE, UNCHANGED
from kafka_rekey_dev.embedded.connect import ConnectWorker
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.fixtures.connect import DebeziumConnector
from tests.support.crm import CrmTable, assert_each_change_once_in_order, cdc_catalog, wait_domain_events
from tests.support.kafka import read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.connect, pytest.mark.registry]

SNAPSHOT_ROWS = 30_000


def _assert_payloads_plain(table: CrmTable, events: dict[str, list[dict[str, Any]]]) -> None:
    unchanged_updates = 0
    for row_id in table.toasted:
        org, interaction = table.ids[row_id]
        for event in events[f"{org}:{interaction}"]:
            assert UNAVAILABLE not in event["payload"]
            payload = json.loads(event["payload"])
            if event["change_op"] == "u":
                assert payload.get(UNCHANGED) == ["notes"] and "notes" not in payload, payload
                unchanged_updates += 1
    assert unchanged_updates > 0, "no update of a row with a TOASTed column was checked"


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_every_committed_row_change_is_one_domain_event_through_an_acl_restart_and_a_connect_kill(
    crm_table: CrmTable, debezium_connector: Callable[..., DebeziumConnector], connect_worker: ConnectWorker,
    catalog_factory: Callable[..., Path], kafka_admin: AdminClient, kafka_bootstrap: str, schema_registry_url: str,
    tmp_path: Path, guarantee: str,
) -> None:
    prefix = f"crm{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}.public.{crm_table.name}"
    catalog_path, catalog = cdc_catalog(catalog_factory, kafka_admin, topic)
    crm_table.insert(SNAPSHOT_ROWS, op="r")
    env = {**acl_env(kafka_bootstrap, schema_registry_url, catalog_path, tmp_path / "state"),
           "REKEY_PROCESSING_GUARANTEE": guarantee}
    acl = ServiceProcess("acl", env, tmp_path).start()
    try:
        connector = debezium_connector([f"public.{crm_table.name}"], topic_prefix=prefix)
        assert connector.topic("public", crm_table.name) == topic
        # The ACL killed while the snapshot is being translated: its successor restores the tables (the rows'
        # ids among them) from their changelogs and goes on from the committed offsets.
        killed_at = wait_until(lambda: (produced := acl.metric("rekey_produced_total", service="acl")) >= 2000
                               and produced, 60, "the ACL produced part of the snapshot")
        acl.kill()
        assert killed_at < SNAPSHOT_ROWS, f"the ACL had produced the whole snapshot ({killed_at:.0f}) when killed"
        acl = ServiceProcess("acl", env, tmp_path, name="acl-restarted").start()

        crm_table.update_status(list(crm_table.ids)[:600], "active")  # toasted notes among them stay unchanged
        streamed = crm_table.insert(200)
        crm_table.transaction(20, streamed[:20])
        # Killed before its initial snapshot's completion was flushed, Debezium reads every row again (a second
        # snapshot, new events, not a redelivery): the kill is for the streamed changes it re-sends.
        wait_until(lambda: connect_worker.snapshot_flushed(connector.name), 120,
                   "Debezium's flushed offset saying its snapshot completed")
        connect_worker.kill()  # Debezium resumes from its last flushed offset: what it re-sends, the ACL drops
        crm_table.update_status(streamed[20:120], "completed")
        connect_worker.start(timeout=120, die_with_caller=True)
        connect_worker.wait_connector_running(connector.name, timeout=90)
        crm_table.delete(list(crm_table.ids)[:150] + streamed[100:150])  # replica identity DEFAULT: only the key
        crm_table.update_status(streamed[150:200], "abandoned")

        events = wait_domain_events(kafka_bootstrap, catalog, crm_table)
        dead_lettered = acl.metric("rekey_dead_lettered_total", service="acl")
    finally:
        acl.stop()
    assert_each_change_once_in_order(crm_table, events, guarantee == "exactly_once")
    _assert_payloads_plain(crm_table, events)
    assert dead_lettered == 0
    assert read_topic(kafka_bootstrap, catalog.dlq_topic) == []

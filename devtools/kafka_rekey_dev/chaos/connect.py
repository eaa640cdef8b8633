"""The `connect` fault scenario: Debezium's PostgreSQL connector on the embedded Kafka Connect worker streams a CRM
workload (the demo's: inserts, status updates leaving TOASTed notes unchanged, deletes under the default replica
identity, a multi-row transaction) into the catalog's CDC source while the live ACL re-keys it; the Connect
worker is killed (kill -9) mid-stream and restarted. Debezium resumes from the offset it last flushed and sends
the changes since again; the ACL's dedupe by event id must drop every one: each committed row change is exactly
one domain event, in commit order per interaction (`shared.checking.cdc`)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable

import psycopg
from confluent_kafka import Consumer, TopicPartition

from kafka_rekey.services.check.cdc import run_cdc_check
from kafka_rekey.services.check.drain import wait_drained
from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.translation import row_key
from kafka_rekey_dev.chaos.harness import ChaosEnv, ChaosResult, Fault
from kafka_rekey_dev.demo.cdc import CdcInfra, cdc_source
from kafka_rekey_dev.demo.crm import WorkloadSummary, prepare_workload
from kafka_rekey_dev.embedded import postgres as embedded_postgres
from kafka_rekey_dev.embedded.connect import postgres_connector_config
from kafka_rekey_dev.embedded.workers import ServiceProcess
from kafka_rekey_dev.waiting import wait_for

Log = Callable[[str], None]
CONNECTOR = "chaos-crm"
SLOT = "rekey_chaos_crm"
SNAPSHOT_ROWS = 50
TIMEOUT = 180.0


def _source_records(config: dict[str, object], topic: str) -> dict[int, int]:
    consumer = Consumer({**config, "group.id": "rekey-chaos-probe", "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
    finally:
        consumer.close()


def _resent(config: dict[str, object], topic: str) -> int:
    """Change records of `topic` that repeat an earlier one's (LSN, op, row key): what Debezium sent again."""
    seen: set[tuple[object, object, bytes | None]] = set()
    repeats = 0
    for message in iter_topic(dict(config), topic):
        value = message.value()
        if value is None:
            continue
        change = json.loads(value)
        change = change.get("payload", change)
        if not isinstance(change, dict) or "source" not in change:
            continue
        identity = (change["source"].get("lsn"), change.get("op"), row_key(message.key() or b""))
        repeats += identity in seen
        seen.add(identity)
    return repeats


def _slot_active(dsn: str) -> bool:
    """Whether PostgreSQL still sees a walsender on the connector's slot (a killed worker's, until it notices)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", [SLOT]).fetchone()
    return bool(row and row[0])


def connect_kill(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """kill -9 of the Kafka Connect worker while Debezium streams about `events` row changes, restarted."""
    say = log or (lambda _line: None)
    guarantee = "exactly_once" if exactly_once else "at_least_once"
    result = ChaosResult("connect", guarantee, events)
    started = time.monotonic()
    source = cdc_source(env.catalog)
    family = source.feeds[0]
    prefix, schema, table = source.name.rsplit(".", 2)
    app_id = f"rekey-chaos-connect-{uuid.uuid4().hex[:8]}"
    workdir = env.workdir / app_id
    workdir.mkdir(parents=True, exist_ok=True)
    config: dict[str, object] = {"bootstrap.servers": env.bootstrap}
    infra = CdcInfra(workdir, env.bootstrap, group_id=f"{app_id}-connect")
    acl = ServiceProcess("acl", {
        "REKEY_KAFKA_BOOTSTRAP_SERVERS": env.bootstrap, "REKEY_REGISTRY_URL": env.registry_url,
        "REKEY_CATALOG_PATH": str(env.catalog_path), "REKEY_STATE_STORE": "rocksdb",
        "REKEY_DATA_DIR": str(workdir / "state"), "REKEY_APP_ID": app_id, "REKEY_INTERNAL_PARTITIONS": "4",
        "REKEY_PROCESSING_GUARANTEE": guarantee}, workdir, name="acl-1")
    manifest = workdir / "cdc-manifest.jsonl"
    try:
        infra.launch()
        infra.worker.wait_ready(TIMEOUT)
        say(f"PostgreSQL {infra.postgres.dsn}, Kafka Connect {infra.worker.url}")
        workload = prepare_workload(infra.postgres.dsn, manifest, SNAPSHOT_ROWS)
        acl.start(120)
        base = sum(_source_records(config, source.name).values())
        infra.worker.put_connector(CONNECTOR, postgres_connector_config(
            topic_prefix=prefix, database=embedded_postgres.DATABASE, host="127.0.0.1", port=infra.postgres.port,
            user=embedded_postgres.SUPERUSER, password="", table_include_list=[f"{schema}.{table}"],
            slot_name=SLOT, publication_name=SLOT))
        infra.worker.wait_connector_running(CONNECTOR, timeout=60)
        # Killed before its flushed offset says the initial snapshot completed, Debezium snapshots every row again
        # (new events, the changes made meanwhile folded into them), not resending what it had streamed.
        wait_for(lambda: infra.worker.snapshot_flushed(CONNECTOR), TIMEOUT, "Debezium's snapshot flushed")
        summary_box: list[WorkloadSummary] = []
        changes = threading.Thread(target=lambda: summary_box.append(workload.run(
            inserts=events // 5, updates=events * 3 // 5, rewrites=max(1, events // 50), deletes=events // 15)))
        changes.start()
        # The kill lands once the stream is under way: a third of the changes in the topic, some processed.
        wait_for(lambda: sum(_source_records(config, source.name).values()) - base >= SNAPSHOT_ROWS + events // 3,
                 TIMEOUT, "a third of the changes streamed")
        sent = sum(_source_records(config, source.name).values()) - base
        # What the kill leaves in flight is the connector's: the records it had sent but not yet flushed the
        # source offsets of, which it sends again (`committed` is set from them once they are counted).
        fault = Fault("kill -9 of the Connect worker", time.monotonic() - started, sent, 0,
                      monotonic=time.monotonic())
        infra.worker.kill()
        result.faults.append(fault)
        say(f"kill -9 of the Connect worker with {sent} records of the connector in the topic")
        wait_for(lambda: not _slot_active(infra.postgres.dsn), 90, "the killed worker's replication slot released")
        infra.worker.start(TIMEOUT, die_with_caller=True)
        infra.worker.wait_connector_running(CONNECTOR, timeout=90)
        fault.recover_seconds = time.monotonic() - fault.monotonic
        say(f"Connect worker and connector running again after {fault.recover_seconds:.1f}s")
        changes.join(TIMEOUT)
        summary = summary_box[0]
        expected = summary.source_records
        try:
            wait_for(lambda: sum(_source_records(config, source.name).values()) - base >= expected, TIMEOUT,
                     f"Debezium's {expected} records of the committed changes")
        except TimeoutError as error:
            found = sum(_source_records(config, source.name).values()) - base
            raise TimeoutError(f"{error} ({found} there; connector {infra.worker.connector_status(CONNECTOR)}):\n"
                           f"{infra.worker.log_tail(40)}") from None
        written = sum(_source_records(config, source.name).values()) - base
        drained = wait_drained(config, app_id, [source.name, f"{app_id}-sequencing"], TIMEOUT)
        result.drain_seconds = drained.seconds
        skipped = acl.metric("rekey_skipped_total", service="acl", reason="duplicate")
    finally:
        acl.stop()
        infra.stop()
    checked = run_cdc_check(KafkaSettings(bootstrap_servers=env.bootstrap), RegistrySettings(url=env.registry_url),
                            env.catalog, family, manifest, source.name)
    report = checked.report
    result.reports[family] = report.outputs
    result.records_sent = written
    result.keys = report.keys
    for name, count in report.violations().items():
        result.failures.append(f"{name}: {count}")
    resent = _resent(config, source.name)
    fault.committed = max(0, sent - resent)
    result.notes.append(f"{summary.changes} committed row changes, Debezium wrote {written} records ({resent} changes "
                        f"sent again after the kill); the ACL dropped {skipped:.0f} as duplicates")
    if skipped != resent:
        result.failures.append(f"Debezium sent {resent} changes again, the ACL dropped {skipped:.0f} as duplicates")
    result.seconds = time.monotonic() - started
    return result

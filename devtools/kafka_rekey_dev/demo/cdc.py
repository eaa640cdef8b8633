"""The demo's CDC part: a CRM table in PostgreSQL, Debezium's PostgreSQL connector on a Kafka Connect worker
writing its changes to the catalog's CDC source topic, the live ACL turning them into domain events, and the
proof that every committed row change became exactly one of them, in commit order per interaction.

It runs on the demo's stack (broker, registry, topics) with rekey's embedded PostgreSQL (`wal_level=logical`)
and Connect worker, both under the demo's work directory; `CdcInfra.launch` starts them while the other part of
the demo runs, `run_cdc` does the rest.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from rich.console import Console

from kafka_rekey.services.check.cdc import CdcCheck, run_cdc_check
from kafka_rekey.services.check.drain import wait_drained
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.catalog.models import SourceTopic
from kafka_rekey.shared.translation import SourceFormat
from kafka_rekey_dev.demo.cdc_views import render_cdc
from kafka_rekey_dev.demo.crm import TABLE, prepare_workload
from kafka_rekey_dev.demo.stack import DemoStack
from kafka_rekey_dev.embedded import postgres as embedded_postgres
from kafka_rekey_dev.embedded.connect import ConnectWorker, postgres_connector_config
from kafka_rekey_dev.embedded.errors import ToolMissing
from kafka_rekey_dev.embedded.postgres import PostgresServer
from kafka_rekey_dev.embedded.processes import free_port

CONNECTOR = "crm-interactions"
SLOT = PUBLICATION = "rekey_demo_crm"
SNAPSHOT_ROWS = 30
ACL_GROUP = "rekey-acl"


class CdcDemoFailed(RuntimeError):
    """The CDC part could not finish (a connector, a delivery or the ACL that did not get there in time)."""


@dataclass
class CdcResult:
    passed: bool
    summary: str
    """One line: what was proven, or what failed."""


class CdcInfra:
    """The embedded PostgreSQL and Connect worker of the CDC part, in `workdir`, on the demo's broker."""

    def __init__(self, workdir: Path, bootstrap: str, group_id: str | None = None) -> None:
        """`group_id`: the Connect worker's group, whose storage topics keep its connectors' offsets (one of its
        own where several runs share a broker)."""
        # Under the system's temporary directory: PostgreSQL runs as an unprivileged user, who may not traverse a
        # checkout in a private home (or a `mktemp -d`).
        self.postgres_dir = Path(tempfile.mkdtemp(prefix="rekey-demo-pg-"))
        self.postgres = PostgresServer(self.postgres_dir, port=embedded_postgres.free_port())
        self.worker = ConnectWorker(workdir / "connect", bootstrap_servers=bootstrap, port=free_port(8083),
                                    group_id=group_id)
        self.started = False

    def launch(self) -> None:
        """Start PostgreSQL and the Connect worker's JVM; the worker starts up while the caller goes on."""
        self.started = True
        try:
            self.postgres.start()
            self.worker.launch(die_with_caller=True)
        except ToolMissing as error:
            raise ToolMissing(f"{error} (`rekey demo --no-cdc` runs the demo without its CDC part)") from error

    def wait_ready(self, console: Console) -> None:
        if not self.started:
            self.launch()
        with console.status("starting Kafka Connect with Debezium's PostgreSQL connector ..."):
            self.worker.wait_ready(180)
        console.print(f"[green]✓[/] PostgreSQL {self.postgres.dsn} (wal_level=logical), "
                      f"Kafka Connect {self.worker.url}")

    def stop(self) -> None:
        if self.started:
            self.worker.stop()
            self.postgres.stop()
        shutil.rmtree(self.postgres_dir, ignore_errors=True)


def cdc_source(catalog: Catalog) -> SourceTopic:
    """The catalog's Debezium source: its topic is `<topic.prefix>.<schema>.<table>` of the captured table."""
    for source in catalog.sources:
        if source.format is SourceFormat.DEBEZIUM and source.name.endswith(f".{TABLE}"):
            return source
    raise CdcDemoFailed(f"the catalog declares no debezium source for the table {TABLE} (a source named "
                        f"'<prefix>.{TABLE}' with format debezium)")


def _records(consumer: Consumer, topic: str) -> int:
    metadata = consumer.list_topics(topic, timeout=10).topics[topic]
    total = 0
    for partition in metadata.partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        total += high - low
    return total


def _wait_records(config: dict[str, Any], topic: str, count: int, timeout: float, what: str,
                  worker: ConnectWorker, stall: float | None = None) -> tuple[int, float]:
    """Wait until `topic` holds `count` records: (records, seconds it took). With `stall`, give up waiting once
    nothing arrived for that long (the check then says what is missing); else raise at the timeout."""
    consumer = Consumer({**config, "group.id": "rekey-demo-probe", "enable.auto.commit": False})
    started = moved = time.monotonic()
    last = -1
    try:
        while (found := _records(consumer, topic)) < count:
            now = time.monotonic()
            if found != last:
                last, moved = found, now
            status = worker.connector_status(CONNECTOR)
            failed = [part for part in [status["connector"], *status["tasks"]] if part["state"] == "FAILED"] \
                if status else []
            if failed:
                raise CdcDemoFailed(f"connector {CONNECTOR} failed: {failed[0].get('trace', '')[:400]}")
            if stall is not None and now - moved > stall:
                return found, now - started
            if now - started > timeout:
                raise CdcDemoFailed(f"{what}: {found} of {count} records in {topic} after {timeout:.0f}s "
                                    f"(Connect log {worker.log_file})")
            time.sleep(0.3)
    finally:
        consumer.close()
    return found, time.monotonic() - started


def run_cdc(console: Console, stack: DemoStack, infra: CdcInfra) -> CdcResult:
    """The CDC part on a running stack; raises CdcDemoFailed when a step does not finish."""
    source = cdc_source(stack.catalog)
    family = source.feeds[0]
    prefix, schema, table = source.name.rsplit(".", 2)
    infra.wait_ready(console)
    manifest = stack.workdir / "cdc-manifest.jsonl"
    workload = prepare_workload(infra.postgres.dsn, manifest, SNAPSHOT_ROWS)
    try:
        toasted, rows = workload.toasted()
        console.print(f"[green]✓[/] {TABLE}: {rows} rows committed before the connector (its snapshot), notes "
                      f"stored out of line (TOAST) in {toasted}")
        with stack.service("acl") as acl:
            config = postgres_connector_config(
                topic_prefix=prefix, database=embedded_postgres.DATABASE, host="127.0.0.1",
                port=infra.postgres.port, user=embedded_postgres.SUPERUSER, password="",
                table_include_list=[f"{schema}.{table}"], slot_name=SLOT, publication_name=PUBLICATION)
            infra.worker.put_connector(CONNECTOR, config)
            infra.worker.wait_connector_running(CONNECTOR, timeout=60)
            kafka = stack.kafka_config
            with console.status(f"Debezium: snapshot of {TABLE} ..."):
                _, seconds = _wait_records(kafka, source.name, SNAPSHOT_ROWS, 60, "the snapshot", infra.worker)
            console.print(f"[green]✓[/] connector {CONNECTOR} (pgoutput, publication and slot {SLOT}): snapshot of "
                          f"{SNAPSHOT_ROWS} rows in {source.name} ({seconds:.1f} s)")
            with console.status("the CRM at work: inserts, status updates, note rewrites, deletes ..."):
                summary = workload.run()
            console.print(f"[green]✓[/] committed {summary.changes - summary.snapshot_rows} row changes in "
                          f"{summary.transactions - 1} transactions ({summary.by_op.get('c', 0)} inserts, "
                          f"{summary.by_op.get('u', 0)} updates, {summary.deletes} deletes; one transaction of "
                          f"several rows), rolled back {summary.rolled_back}; manifest {manifest.name}")
            with console.status("Debezium: streaming the changes ..."):
                found, seconds = _wait_records(kafka, source.name, summary.source_records, 120,
                                               "Debezium's changes", infra.worker, stall=15)
            if found == summary.source_records:
                console.print(f"[green]✓[/] {source.name}: {found} records (a tombstone after each delete), the "
                              f"last {seconds:.1f} s after the last commit")
            else:
                console.print(f"[red]✗[/] {source.name}: {found} records of the {summary.source_records} the "
                              f"committed changes make (a tombstone after each delete), none more for 15 s")
            topics = [s.name for s in stack.catalog.sources] + [f"{ACL_GROUP}-sequencing"]
            with console.status(f"{acl.name}: catching up ..."):
                try:
                    drained = wait_drained(kafka, ACL_GROUP, topics, 180, settle=1.0)
                except TimeoutError as error:
                    raise CdcDemoFailed(f"the ACL did not catch up: {error}") from error
            console.print(f"[green]✓[/] {acl.name}: caught up ({drained.seconds:.1f} s after the last delivery)")
    finally:
        workload.close()
    checked = run_cdc_check(KafkaSettings(bootstrap_servers=stack.bootstrap), RegistrySettings(url=stack.registry_url),
                            stack.catalog, family, manifest, source.name)
    render_cdc(console, stack.kafka_config, stack.catalog, source.name, checked, summary)
    return _verdict(console, checked, family, TABLE)


def _verdict(console: Console, checked: CdcCheck, family: str, table: str) -> CdcResult:
    report = checked.report
    out_of_order = len(report.outputs.out_of_order) + len(report.lsn_out_of_order)
    line = (f"{report.changes} committed row changes of {table} -> {report.events} {family} events: lost "
            f"{len(report.lost)}, unexpected {len(report.unexpected)}, mismatched {len(report.mismatched)}, gaps "
            f"{len(report.outputs.gaps)}, out of order {out_of_order}, "
            f"duplicates {report.outputs.duplicates}, off-parity {len(report.outputs.wrong_partition)}, TOAST "
            f"placeholders {len(report.placeholders)}, dead letters {sum(report.dead_letters.values())}")
    if report.passed():
        console.print(f"[green]✓[/] CDC: {line}")
        return CdcResult(True, line)
    console.print(f"[red]✗[/] CDC: {line}")
    for name in ("lost", "unexpected", "mismatched", "lsn_out_of_order", "placeholders"):
        for sample in getattr(report, name)[:5]:
            console.print(f"    {name}: {sample}")
    for name in ("gaps", "out_of_order", "conflicting", "renumbered", "wrong_partition"):
        for sample in getattr(report.outputs, name)[:5]:
            console.print(f"    {name}: {sample}")
    for reason, count in report.dead_letters.most_common():
        console.print(f"    dead letters: {count} {reason}")
    violations = ", ".join(f"{name} {count}" for name, count in report.violations().items())
    return CdcResult(False, f"CDC: {violations} (of {report.changes} committed row changes)")

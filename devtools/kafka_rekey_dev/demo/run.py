"""The demo: generate badly keyed contact-centre traffic, run the live ACL until it caught up, verify, show; then
the same for a CRM table's changes through Debezium (`kafka_rekey_dev.demo.cdc`)."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kafka_rekey.services.check.run import manifest_expectations, run_check
from kafka_rekey.services.console import make_console
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey_dev.demo.cdc import CdcDemoFailed, CdcInfra, run_cdc
from kafka_rekey_dev.demo.stack import DemoStack, demo_stack
from kafka_rekey_dev.demo.views import (
    domain_layout,
    render_before_after,
    render_dead_letters,
    render_skew,
    source_spread,
)
from kafka_rekey_dev.embedded.maven import REPO_ROOT
from kafka_rekey_dev.embedded.workers import ServiceProcess

DEMO_DIR = REPO_ROOT / "var" / "demo"
PACKAGED_CATALOG = Path(__file__).with_name("topics.yaml")  # an installed wheel's copy of catalog/topics.yaml
CATALOG = PACKAGED_CATALOG if PACKAGED_CATALOG.is_file() else REPO_ROOT / "catalog" / "topics.yaml"


def _wait_for(console: Console, service: ServiceProcess, what: str, target: int, timeout: float) -> None:
    with Progress(TextColumn(f"{service.name}: {what}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(what, total=target)
        deadline = time.monotonic() + timeout
        while (done := int(service.metric("rekey_produced_total", service=service.service))) < target:
            bar.update(task, completed=done)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{service.name} produced {done} of {target} records in {timeout:.0f}s:\n"
                                   f"{service.log_tail()}")
            time.sleep(0.5)
    console.print(f"[green]✓[/] {service.name}: {target:,} records {what}")


def _verify(console: Console, stack: DemoStack, manifest: Path, source: str) -> bool:
    passed = True
    for family in stack.catalog.sources[0].feeds:
        report = run_check(KafkaSettings(bootstrap_servers=stack.bootstrap), RegistrySettings(url=stack.registry_url),
                           stack.catalog, family, manifest, source)
        ok = report.passed(exactly_once=False)
        passed &= ok
        mark = "[green]✓[/]" if ok else "[red]✗[/]"
        console.print(f"{mark} {family}: {report.records:,} records, {report.keys:,} keys, lost {len(report.lost)}, "
                      f"gaps {len(report.gaps)}, out of order {len(report.out_of_order)}, off-parity "
                      f"{len(report.wrong_partition)}, duplicates {report.duplicates}, "
                      f"dead letters missing {len(report.dead_letters_missing)}")
    return passed


def _main_part(console: Console, stack: DemoStack, events: int, workdir: Path) -> bool:
    """Badly keyed contact-centre events through the live ACL and the projection, verified and shown."""
    source = stack.catalog.sources[0]
    manifest = workdir / "manifest.jsonl"
    hot = tuple(dict.fromkeys(
        org for family in stack.catalog.families.values()
        for org in (*family.high_volume_orgs, *family.dedicated)
    ))
    summary = generate_to_topic(stack.bootstrap, source.name, events, 40, hot_orgs=hot,
                                malformed_rate=0.01, duplicate_rate=0.02, seed=42, manifest_path=manifest)
    console.print(f"[green]✓[/] generated {summary.records:,} records into {source.name}: {summary.events:,} "
                  f"events of {summary.interactions:,} interactions in {summary.orgs} orgs, "
                  f"{summary.duplicates} redelivered, {sum(summary.malformed.values())} malformed")
    expected = len(manifest_expectations(manifest, source.name)[0])
    with stack.service("acl") as acl, stack.service("projection") as projection:
        _wait_for(console, acl, "re-keyed and sequenced", expected * len(source.feeds), 600)
        _wait_for(console, projection, "projected to org activity", expected, 600)
    passed = _verify(console, stack, manifest, source.name)
    family = stack.catalog.default_family
    layout = domain_layout(stack.kafka_config, stack.catalog, family)
    render_before_after(console, source_spread(manifest), layout)
    high = stack.catalog.family(family).tiers.high or stack.catalog.family(family).tiers.low
    render_skew(console, layout, high, stack.catalog.topic(high).partitions)
    render_dead_letters(console, stack.kafka_config, stack.catalog.dlq_topic)
    return passed


def run_demo(events: int = 20_000, workdir: Path = DEMO_DIR, catalog_path: Path = CATALOG, cdc: bool = True,
             main: bool = True) -> bool:
    """The demo's parts on one fresh stack: the badly keyed events (`main`), then the CDC path (`cdc`). Its
    last line says whether everything was proven, or what was not."""
    console = make_console()
    failures: list[str] = []
    with demo_stack(workdir, catalog_path, console) as stack:
        infra = CdcInfra(workdir, stack.bootstrap) if cdc else None
        try:
            if infra is not None and main:
                infra.launch()  # PostgreSQL and the Connect worker start up while the events are processed
            if main and not _main_part(console, stack, events, workdir):
                failures.append("the contact-centre events have violations (above)")
            if infra is not None:
                console.print("\n[bold]CDC: a CRM table in PostgreSQL, through Debezium, re-keyed by the ACL[/]")
                try:
                    result = run_cdc(console, stack, infra)
                except CdcDemoFailed as error:
                    failures.append(f"CDC: {error}")
                else:
                    if not result.passed:
                        failures.append(result.summary)
        finally:
            if infra is not None:
                with console.status("stopping Kafka Connect and PostgreSQL ..."):
                    infra.stop()
    if failures:
        console.print(f"[bold red]demo failed: {'; '.join(failures)}[/]")
        return False
    console.print("[bold green]demo passed[/]")
    return True

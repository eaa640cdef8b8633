"""`rekey topics apply|docs`: provision the catalog's topics on a cluster, and render their documentation.

Exit codes of `apply`, as every command's: 0 every topic exists and matches the catalog; 1 no broker answered
within --wait-for-brokers, or the cluster refused an operation; 2 invalid catalog or arguments; 3 drift reported
(configs, replication factor, or more partitions than the catalog) or a keyed topic that needs more partitions
without --allow-remap, nothing changed for it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings, open_catalog
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json

if TYPE_CHECKING:
    from rich.table import Table

    from kafka_rekey.services.topics.apply import ApplyReport

topics_app = typer.Typer(help="Provision and document the topics of the catalog.", no_args_is_help=True)


def _status_table(report: ApplyReport) -> Table:
    from rich.table import Table

    table = Table(title="Topics", title_justify="left")
    for column in ("topic", "status"):
        table.add_column(column, overflow="fold")
    rows = [(name, "[green]created[/]") for name in report.created]
    rows += [(name, "ok") for name in report.unchanged]
    rows += [(i.topic, f"[yellow]partitions {i.current} -> {i.wanted}[/]") for i in report.remapped]
    rows += [(i.topic, f"[red]remap refused ({i.current} -> {i.wanted})[/]") for i in report.refused]
    rows += [(name, "[red]drift[/]") for name in dict.fromkeys(d.topic for d in report.drift)]
    rows += [(name, "external (owned upstream, not checked)") for name in report.external]
    rows += [(name, "[yellow]retired, still exists[/] (`rekey migrate retire --topic ... --delete`)")
             for name in report.retired]
    for row in rows:
        table.add_row(*row)
    return table


def _drift_table(report: ApplyReport) -> Table:
    from rich.table import Table

    from kafka_rekey.shared.catalog.drift import PARTITIONS

    table = Table(title="Drift (not changed: fix the topic or the catalog)", title_justify="left")
    for column in ("topic", "setting", "catalog", "actual"):
        table.add_column(column, overflow="fold")
    for drift in report.drift:
        note = " (Kafka cannot remove partitions: publish a new _vN topic)" if drift.setting == PARTITIONS else ""
        table.add_row(drift.topic, drift.setting, drift.catalog, drift.actual + note)
    return table


def _remap_table(report: ApplyReport) -> Table:
    from rich.table import Table

    table = Table(title="Partition-count changes of keyed topics", title_justify="left")
    for column in ("topic", "partitions", "keys moved", "sample", "action"):
        table.add_column(column, overflow="fold")
    refused = "[red]refused: --allow-remap, or publish a new _vN topic[/]"
    rows = [*((i, "[yellow]increased[/]") for i in report.remapped), *((i, refused) for i in report.refused)]
    for impact, action in rows:
        table.add_row(impact.topic, f"{impact.current} -> {impact.wanted}",
                      f"{impact.moved} of {impact.sampled} ({impact.moved_percent:.1f}%)", impact.sample, action)
    return table


@topics_app.command()
def apply(
    catalog_path: CatalogOption = None,
    bootstrap_servers: BootstrapOption = None,
    allow_remap: Annotated[bool, typer.Option(
        "--allow-remap", help="Increase the partition count of keyed topics (moves where their keys land).",
    )] = False,
    wait_for_brokers: Annotated[float, typer.Option(
        "--wait-for-brokers", min=0, help="Seconds to keep retrying until a broker answers (0: one attempt).",
    )] = 0.0,
    replication_factor: Annotated[int | None, typer.Option(
        "--replication-factor", min=1, help="Replication factor for every topic, overriding the catalog's.",
    )] = None,
    min_insync_replicas: Annotated[int | None, typer.Option(
        "--min-insync-replicas", min=1, help="min.insync.replicas for every topic, overriding the catalog's.",
    )] = None,
    sample_size: Annotated[int, typer.Option(
        "--sample-size", min=1, help="Keys sampled to count how many a partition change would move.",
    )] = 10_000,
    output: OutputOption = Output.table,
) -> None:
    """Create missing topics, report drift, and guard partition-count changes of keyed topics.

    \b
    Exit codes: 0 in sync; 1 no broker answered in --wait-for-brokers, or Kafka refused an operation; 2 invalid
    catalog/arguments; 3 drift reported, or a keyed partition change refused (needs --allow-remap).
    """
    from confluent_kafka import KafkaException

    from kafka_rekey.services.kafka.topics import BrokersUnavailable, TopicAdminError
    from kafka_rekey.services.topics.apply import apply_catalog

    console = make_console()
    with user_errors():
        catalog = open_catalog(catalog_path)
        settings = kafka_settings(bootstrap_servers)
    try:
        with user_errors():
            report = apply_catalog(
                catalog, settings.librdkafka(), allow_remap=allow_remap, replication_factor=replication_factor,
                min_insync_replicas=min_insync_replicas, wait_for_brokers_seconds=wait_for_brokers,
                sample_size=sample_size,
            )
    except (BrokersUnavailable, TopicAdminError, KafkaException) as error:
        make_console(stderr=True).print(f"[bold red]error:[/] {error}", highlight=False)
        raise typer.Exit(ExitCode.FAILED) from error
    exit_code = ExitCode.OK if report.in_sync else ExitCode.PROBLEM_FOUND
    if output is Output.json:
        print_json({"catalog_version": catalog.version, "bootstrap_servers": settings.bootstrap_servers,
                    **dataclasses.asdict(report), "exit_code": int(exit_code)})
        raise typer.Exit(exit_code)
    console.print(_status_table(report))
    if report.remapped or report.refused:
        console.print(_remap_table(report))
    for impact in report.refused:
        console.print(
            f"refused: {impact.topic} {impact.current} -> {impact.wanted} partitions would move {impact.moved} of "
            f"{impact.sampled} sampled keys ({impact.moved_percent:.1f}%, {impact.sample} sample) to another "
            "partition; re-run with --allow-remap to accept, or publish a new _vN topic", highlight=False,
        )
    if report.drift:
        console.print(_drift_table(report))
    console.print(f"catalog version {catalog.version} applied to {settings.bootstrap_servers}: "
                  f"{len(report.created)} created, {len(report.unchanged)} unchanged, "
                  f"{len(report.remapped)} grown, {len(report.refused)} refused, "
                  f"{len({d.topic for d in report.drift})} drifted; exit {int(exit_code)}", highlight=False)
    raise typer.Exit(exit_code)


@topics_app.command()
def docs(
    catalog_path: CatalogOption = None,
    out: Annotated[Path, typer.Option("--out", help="Markdown file to write.")] = Path("docs/TOPICS.md"),
) -> None:
    """Render the Markdown documentation of every topic in the catalog."""
    with user_errors():
        from kafka_rekey.services.catalog_files import display_path
        from kafka_rekey.services.settings import ServiceSettings
        from kafka_rekey.shared.catalog import render_markdown

        path = catalog_path or ServiceSettings().catalog_path
        catalog = open_catalog(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_markdown(catalog, display_path(path)), encoding="utf-8")
    make_console().print(f"wrote {out} ({len(catalog.topics) + len(catalog.sources)} topics)", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(topics_app, name="topics")

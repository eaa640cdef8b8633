"""`rekey generate`: write realistic, badly keyed source traffic to a topic, with a JSONL manifest of every record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, kafka_settings
from kafka_rekey.services.cli.errors import user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json
from kafka_rekey.shared.source_formats import SourceFormat

if TYPE_CHECKING:
    from rich.table import Table

    from kafka_rekey.services.generation import GenerationSummary


def generate(
    topic: Annotated[str, typer.Option("--topic", help="Existing source topic to write to.")],
    events: Annotated[int, typer.Option("--events", help="Records to send in total (incl. faults).")] = 10_000,
    orgs: Annotated[int, typer.Option("--orgs", help="Number of tenant orgs.")] = 100,
    zipf: Annotated[float, typer.Option("--zipf", help="Zipf exponent of tenant sizes (0 = equal).")] = 1.1,
    hot_orgs: Annotated[str, typer.Option("--hot-orgs", help="Comma-separated orgs that take the top ranks.")] = "",
    malformed_rate: Annotated[float, typer.Option("--malformed-rate", help="Share of poison-pill records.")] = 0.0,
    duplicate_rate: Annotated[float, typer.Option("--duplicate-rate", help="Share of redelivered events.")] = 0.0,
    late_rate: Annotated[float, typer.Option("--late-rate", help="Share of events sent late / out of order.")] = 0.02,
    source_format: Annotated[SourceFormat, typer.Option("--source-format", help="Source format.")] = (
        SourceFormat.CCAAS_JSON),
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same traffic.")] = 0,
    manifest: Annotated[Path | None, typer.Option("--manifest", help="Write a JSONL line per record here.")] = None,
    bootstrap_servers: BootstrapOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Generate interaction lifecycles of Zipf-sized tenants, with late events, duplicates and poison pills."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kafka_rekey.services.generation import GenerationError, generate_to_topic

    console = make_console(stderr=output is Output.json)
    settings = kafka_settings(bootstrap_servers)
    with user_errors(), Progress(
        TextColumn("[bold]generating[/] {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as bar:
        task = bar.add_task(topic, total=events)
        try:
            summary = generate_to_topic(
                settings, topic, events, orgs, zipf=zipf,
                hot_orgs=tuple(org.strip() for org in hot_orgs.split(",") if org.strip()),
                malformed_rate=malformed_rate, duplicate_rate=duplicate_rate, late_rate=late_rate,
                source_format=source_format, seed=seed, manifest_path=manifest,
                progress=lambda sent: bar.update(task, completed=sent),
            )
        except GenerationError as error:
            raise ValueError(str(error)) from error
    if output is Output.json:
        print_json(summary)
        return
    console.print(_table(summary))


def _table(summary: GenerationSummary) -> Table:
    from rich.table import Table

    table = Table(title=f"sent to {summary.topic}", show_header=False)
    malformed = ", ".join(f"{reason} {count}" for reason, count in sorted(summary.malformed.items())) or "0"
    for name, value in [
        ("records", f"{summary.records:,} in {summary.seconds:.1f}s ({summary.records_per_second:,.0f}/s)"),
        ("events", f"{summary.events:,} ({summary.interactions:,} interactions of {summary.orgs:,} orgs)"),
        ("duplicates", f"{summary.duplicates:,}"),
        ("malformed", malformed),
        ("tombstones", f"{summary.tombstones:,}"),
        ("late", f"{summary.late:,}"),
        ("partitions", ", ".join(f"{p}: {n:,}" for p, n in summary.partitions.items())),
        ("manifest", str(summary.manifest_path or "-")),
    ]:
        table.add_row(name, value)
    return table


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)

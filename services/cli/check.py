"""`rekey check`: verify a family's output topics after a run (lost, order, parity, duplicates, DLQ)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings, open_catalog
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json


def check(
    family: Annotated[str, typer.Option(help="Topic family whose output topics are checked.")] = "interaction_events",
    manifest: Annotated[Path | None, typer.Option(help="Generator manifest (JSONL) of what was sent.")] = None,
    source: Annotated[str | None, typer.Option(help="Source topic the manifest's offsets refer to.")] = None,
    catalog: CatalogOption = None,
    bootstrap_servers: BootstrapOption = None,
    exactly_once: Annotated[bool, typer.Option("--exactly-once", help="Duplicates are violations.")] = False,
    group: Annotated[str | None, typer.Option(
        help="ACL consumer group (REKEY_APP_ID): first wait until it has committed past every record of the "
             "source topics and of its sequencing topic.")] = None,
    drain_timeout: Annotated[float, typer.Option(help="Seconds to wait for --group to drain.")] = 600.0,
    output: OutputOption = Output.table,
) -> None:
    """Read every output record (read_committed) after the run drained and check it. Exit 3 on a violation."""
    from rich.progress import Progress, SpinnerColumn, TextColumn
    from rich.table import Table

    from kafka_rekey.services.settings import RegistrySettings

    console = make_console(stderr=output is Output.json)  # progress must not mix with the JSON on stdout
    with user_errors():
        loaded = open_catalog(catalog)
        kafka = kafka_settings(bootstrap_servers)
        if group is not None:
            from kafka_rekey.services.check.drain import wait_drained

            with console.status(f"waiting for group {group} to drain ..."):
                drained = wait_drained(kafka.librdkafka(), group,
                                       [s.name for s in loaded.sources] + [f"{group}-sequencing"], drain_timeout)
            console.print(f"group {group} drained ({drained.seconds:.1f} s)")
        with Progress(SpinnerColumn(), TextColumn("{task.description} {task.completed:,} records"),
                      console=console, transient=True) as bar:
            task = bar.add_task("reading outputs")
            from kafka_rekey.services.check.run import run_check  # the check's readers: loaded only by this command
            report = run_check(kafka, RegistrySettings(), loaded, family, manifest, source,
                               progress=lambda n: bar.advance(task, n))
    violations = report.violations(exactly_once)
    if output is Output.json:
        print_json({**report.__dict__, "violations": violations})
        raise typer.Exit(ExitCode.PROBLEM_FOUND if violations else ExitCode.OK)
    table = Table(title=f"rekey check: {family}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in [("records", report.records), ("keys", report.keys), ("duplicates", report.duplicates),
                        ("conflicting (key, seq)", len(report.conflicting)),
                        ("renumbered events", len(report.renumbered)),
                        ("lost", len(report.lost)), ("unexpected", len(report.unexpected)),
                        ("keys with gaps", len(report.gaps)), ("keys out of order", len(report.out_of_order)),
                        ("off-parity records", len(report.wrong_partition)),
                        ("dead letters missing", len(report.dead_letters_missing))]:
        table.add_row(name, f"{value:,}")
    console.print(table)
    if violations:
        console.print(f"[bold red]FAILED[/]: {violations}")
        for name in ("lost", "conflicting", "renumbered", "gaps", "out_of_order", "wrong_partition",
                     "dead_letters_missing"):
            sample = getattr(report, name)[:5]
            if sample:
                console.print(f"  {name}: {', '.join(sample)}")
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    console.print("[bold green]PASSED[/]")


def register(app: typer.Typer) -> None:
    app.command(name="check")(check)

"""`rekey check`: verify a family's output topics after a run (lost, order, parity, duplicates, DLQ)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table

from services.catalog_files import load_catalog
from services.check.run import run_check
from services.cli.errors import user_errors
from services.settings import KafkaSettings, RegistrySettings

_console = Console()


def check(
    family: Annotated[str, typer.Option(help="Topic family whose output topics are checked.")] = "interaction_events",
    manifest: Annotated[Path | None, typer.Option(help="Generator manifest (JSONL) of what was sent.")] = None,
    source: Annotated[str | None, typer.Option(help="Source topic the manifest's offsets refer to.")] = None,
    catalog: Annotated[Path | None, typer.Option(help="Topic catalog (default: REKEY_CATALOG_PATH).")] = None,
    exactly_once: Annotated[bool, typer.Option("--exactly-once", help="Duplicates are violations.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the report as JSON here.")] = None,
    group: Annotated[str | None, typer.Option(
        help="ACL consumer group (REKEY_APP_ID): first wait until it has committed past every record of the "
             "source topics and of its sequencing topic.")] = None,
    drain_timeout: Annotated[float, typer.Option(help="Seconds to wait for --group to drain.")] = 600.0,
) -> None:
    """Read every output record (read_committed) after the run drained and check it. Exit 1 on a violation."""
    from services.settings import ServiceSettings

    with user_errors():
        loaded = load_catalog(catalog or ServiceSettings().catalog_path)
        if group is not None:
            from services.check.drain import wait_drained

            with _console.status(f"waiting for group {group} to drain ..."):
                drained = wait_drained(KafkaSettings().librdkafka(), group,
                                       [s.name for s in loaded.sources] + [f"{group}-sequencing"], drain_timeout)
            _console.print(f"group {group} drained ({drained.seconds:.1f} s)")
        with Progress(SpinnerColumn(), TextColumn("{task.description} {task.completed:,} records"),
                      console=_console, transient=True) as bar:
            task = bar.add_task("reading outputs")
            report = run_check(KafkaSettings(), RegistrySettings(), loaded, family, manifest, source,
                               progress=lambda n: bar.advance(task, n))
    violations = report.violations(exactly_once)
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
    _console.print(table)
    if json_out is not None:
        json_out.write_text(json.dumps({**report.__dict__, "violations": violations}, indent=2))
    if violations:
        _console.print(f"[bold red]FAILED[/]: {violations}")
        for name in ("lost", "conflicting", "renumbered", "gaps", "out_of_order", "wrong_partition",
                     "dead_letters_missing"):
            sample = getattr(report, name)[:5]
            if sample:
                _console.print(f"  {name}: {', '.join(sample)}")
        raise typer.Exit(1)
    _console.print("[bold green]PASSED[/]")


def register(app: typer.Typer) -> None:
    app.command(name="check")(check)

"""`rekey chaos SCENARIO`: a fault-injection run on its own embedded stack, checked and recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.catalog_options import CatalogOption
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import make_console


def chaos(
    scenario: Annotated[str, typer.Argument(
        help="kill | rebalance | broker | poison | redelivery | sigterm | pause | seam | connect | backfill")],
    events: Annotated[int, typer.Option(help="Source events to send.")] = 20_000,
    exactly_once: Annotated[bool, typer.Option("--exactly-once", help="Run the ACL with exactly_once.")] = False,
    workdir: Annotated[Path, typer.Option(help="Scratch directory for the stack (wiped first).")] = Path(
        "var/chaos"),
    catalog: CatalogOption = None,
    record: Annotated[bool, typer.Option("--record", help="Add/update this run's row in docs/RELIABILITY.md.")] = False,
    master: Annotated[str | None, typer.Option(
        "--master", help="backfill only: the Spark master; on spark://... (`rekey spark start`) the executors' "
                         "Python workers are killed, then an executor JVM (default: the Python workers of "
                         "local[2,4]).")] = None,
) -> None:
    """Start Kafka (3 brokers for `broker`) and the schema registry, send traffic, run ACL workers, inject the
    scenario's fault while records are in flight, wait for the drain, check every output record.

    Exit 0 PASSED, 3 FAILED (a violation), 1 INVALID (the fault did not land while records were in flight: the
    run could not test what was asked)."""
    from kafka_rekey.services.settings import ServiceSettings
    from kafka_rekey_dev.chaos.harness import FAILED, INVALID
    from kafka_rekey_dev.chaos.report import print_result
    from kafka_rekey_dev.chaos.report import record as record_row
    from kafka_rekey_dev.chaos.scenarios import SCENARIOS
    from kafka_rekey_dev.chaos.stack import chaos_stack

    if scenario not in SCENARIOS:
        raise typer.BadParameter(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
    if master and scenario != "backfill":
        raise typer.BadParameter("--master is an option of the backfill scenario")
    _console = make_console()
    spec = SCENARIOS[scenario]
    with user_errors(), chaos_stack(workdir.resolve(), catalog or ServiceSettings().catalog_path,
                                    nodes=3 if spec.cluster else 1, console=_console) as env:
        _console.print(f"[bold]{scenario}[/]: {spec.description} ({events:,} events, "
                       f"{'exactly_once' if exactly_once else 'at_least_once'})")
        options = {"master": master} if master else {}
        result = spec.run(env, events, exactly_once, log=lambda line: _console.print(f"  {line}", highlight=False),
                          **options)
    print_result(result, _console)
    if record:
        flag = " --exactly-once" if exactly_once else ""
        record_row(result, f"`rekey chaos {scenario} --events {events}{flag}`")
    if result.status == FAILED:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    if result.status == INVALID:
        raise typer.Exit(ExitCode.FAILED)


def register(app: typer.Typer, panel: str) -> None:
    app.command(name="chaos", rich_help_panel=panel)(chaos)

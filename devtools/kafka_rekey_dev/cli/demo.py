"""`rekey demo`: run the main job end to end on a fresh embedded stack and show the result."""

from __future__ import annotations

from typing import Annotated

import typer

from kafka_rekey.services.cli.errors import ExitCode, user_errors


def demo(
    events: Annotated[int, typer.Option(help="Source records to generate.")] = 20_000,
    cdc_only: Annotated[bool, typer.Option("--cdc-only", help="Only the CDC part: PostgreSQL -> Debezium -> ACL.")]
    = False,
    cdc: Annotated[bool, typer.Option("--cdc/--no-cdc", help="Run the CDC part after the contact-centre events.")]
    = True,
) -> None:
    """Start Kafka and the registry, create the catalog's topics, generate badly keyed traffic, run the ACL and
    projection until caught up, verify every record, show before/after; then the CDC path: a CRM table in the
    embedded PostgreSQL, Debezium's connector on an embedded Kafka Connect worker, the ACL, and the proof that
    every committed row change is one domain event in commit order. Stop everything. Exit 3 on a violation."""
    from kafka_rekey_dev.demo.run import run_demo

    if cdc_only and not cdc:
        raise typer.BadParameter("--cdc-only and --no-cdc leave nothing to run")
    with user_errors():
        if not run_demo(events, cdc=cdc, main=not cdc_only):
            raise typer.Exit(ExitCode.PROBLEM_FOUND)


def register(app: typer.Typer, panel: str) -> None:
    app.command(name="demo", rich_help_panel=panel)(demo)

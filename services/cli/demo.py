"""`rekey demo`: run the main job end to end on a fresh embedded stack and show the result."""

from __future__ import annotations

from typing import Annotated

import typer

from services.cli.errors import user_errors


def demo(events: Annotated[int, typer.Option(help="Source records to generate.")] = 20_000) -> None:
    """Start Kafka and the registry, create the catalog's topics, generate badly keyed traffic, run the ACL and
    projection until caught up, verify every record, show before/after, stop everything. Exit 1 on a violation."""
    from services.devtools.demo.run import run_demo

    with user_errors():
        if not run_demo(events):
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command(name="demo")(demo)

"""Entry point of the `rekey` console script."""

from __future__ import annotations

import typer

from services.cli import (
    backfill,
    bench,
    broker,
    chaos,
    check,
    demo,
    explain,
    generate,
    partition,
    plan,
    postgres,
    reconcile,
    registry,
    run,
    topics,
)

app = typer.Typer(
    name="rekey",
    help="Re-key badly keyed Kafka topics into versioned domain topics with Java-parity partitions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

for module in (demo, broker, postgres, registry, topics, run, generate, check, backfill, reconcile, partition, explain,
               plan, bench, chaos):
    module.register(app)


def main() -> None:
    app()

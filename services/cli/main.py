"""Entry point of the `rekey` console script."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from services.cli import (
    backfill,
    bench,
    broker,
    chaos,
    check,
    connect,
    dashboard,
    deadletters,
    demo,
    explain,
    generate,
    partition,
    plan,
    postgres,
    reconcile,
    registry,
    replay,
    run,
    spark,
    status,
    topics,
    translate,
)

app = typer.Typer(
    name="rekey",
    help="Re-key badly keyed Kafka topics into versioned domain topics with Java-parity partitions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(requested: bool) -> None:
    if requested:
        from importlib.metadata import version

        typer.echo(f"rekey {version('rekey')}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    _version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                           help="Print the installed version and exit.")] = False,
    config: Annotated[Path | None, typer.Option(
        "--config", metavar="<file>", exists=True, dir_okay=False, envvar="REKEY_CONFIG",
        help="YAML file of settings, each group under its name (kafka: {bootstrap_servers: ...}, registry: "
             "{url: ...}, catalog_path: ...); REKEY_* variables win over it.")] = None,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True,
                                         help="Show the Kafka client's (librdkafka's) log lines: -v its warnings "
                                              "and errors, -vv everything it logs. `rekey run` leaves them to "
                                              "librdkafka, on stderr.")] = 0,
) -> None:
    """Re-key badly keyed Kafka topics into versioned domain topics with Java-parity partitions."""
    import logging

    # httpx logs every request at info: a worker's registry look-ups would bury its own lines.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if config is not None:  # the settings read it from the environment, as the services' own processes do
        import os

        previous = os.environ.get("REKEY_CONFIG")
        os.environ["REKEY_CONFIG"] = str(config.absolute())
        ctx.call_on_close(lambda: os.environ.update(REKEY_CONFIG=previous) if previous is not None
                          else os.environ.pop("REKEY_CONFIG", None))
    from services.observability.librdkafka import route_client_logs

    route_client_logs(True)  # `rekey run` turns it off again for its service
    # Undone when the command ends, for a caller that runs commands in-process (the tests).
    ctx.call_on_close(lambda: route_client_logs(False))
    if verbose:
        from services.observability.librdkafka import hide_librdkafka_logs, show_librdkafka_logs

        handler = show_librdkafka_logs(logging.WARNING if verbose == 1 else logging.DEBUG)
        ctx.call_on_close(lambda: hide_librdkafka_logs(handler))


for module in (demo, broker, postgres, registry, connect, topics, run, status, translate, generate, check, backfill,
               reconcile, partition, explain, plan, bench, chaos, spark, deadletters,
               replay, dashboard):
    module.register(app)


def main() -> None:
    """Run the CLI. A command line that names its command builds only that command: typer inspects the signature
    of every registered command at each start (about 0.1 s for all of them), which a quick command such as
    `rekey partition` should not pay. Without a command (`rekey --help`) every command is built."""
    named = _named_command(sys.argv[1:])
    commands = {info.name or info.callback.__name__.replace("_", "-"): info
                for info in app.registered_commands if info.callback is not None}
    groups = {info.name: info for info in app.registered_groups}
    if named in commands or named in groups or sys.argv[1:] == ["--version"]:
        app.registered_commands = [commands[named]] if named in commands else []
        app.registered_groups = [groups[named]] if named in groups else []
    app()


def _named_command(args: list[str]) -> str | None:
    """The first argument that is not a root option (or the value of `--config`)."""
    remaining = iter(args)
    for arg in remaining:
        if arg == "--config":
            next(remaining, None)
        elif not arg.startswith("-"):
            return arg
    return None

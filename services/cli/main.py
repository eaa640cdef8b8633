"""Entry point of the `rekey` console script."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from kafka_rekey.services import DISTRIBUTION
from kafka_rekey.services.cli import (
    backfill,
    check,
    deadletters,
    explain,
    generate,
    migrate,
    partition,
    plan,
    reconcile,
    replay,
    run,
    status,
    topics,
    translate,
)

DEV_DISTRIBUTION = "kafka-rekey-dev"
PLUGIN_GROUP = "kafka_rekey.commands"
"""Entry points of this group add commands: `kafka-rekey-dev` adds the development ones."""
DEV_COMMANDS = {
    "demo": "Run the demo end to end on an embedded stack.",
    "broker": "Run an embedded Kafka (KRaft) broker or cluster on 127.0.0.1.",
    "registry": "Run an embedded schema registry (Apicurio, Confluent API) on 127.0.0.1.",
    "postgres": "Run an embedded PostgreSQL server on 127.0.0.1.",
    "connect": "Run an embedded Kafka Connect worker with Debezium on 127.0.0.1.",
    "spark": "Run an embedded Spark standalone cluster on 127.0.0.1.",
    "bench": "Benchmarks against baselines in the same run.",
    "chaos": "Fault scenarios against a running pipeline, checked end to end.",
    "dashboard": "Render the chart's Grafana dashboard from a live run.",
}
"""The commands of `kafka-rekey-dev`, listed (with a hint to install it) when it is not installed."""
PANELS = {
    "Topics and catalog": (topics, plan, partition, explain, translate),
    "Services": (run, status, check, reconcile, deadletters, replay, generate),
    "Migration": (backfill, migrate),
}
DEV_PANEL = f"Development ({DEV_DISTRIBUTION})"

class _PanelledGroup(typer.core.TyperGroup):
    """The root group's help: its commands under their panels' headings, each with its whole first sentence."""

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:
        panels: dict[str, list[tuple[str, str]]] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                panel = getattr(command, "rich_help_panel", None) or "Commands"
                panels.setdefault(panel, []).append((name, command.get_short_help_str(limit=1000)))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)


app = typer.Typer(
    name="rekey",
    cls=_PanelledGroup,
    help="Re-key badly keyed Kafka topics into versioned domain topics with Java-parity partitions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(requested: bool) -> None:
    if requested:
        from importlib.metadata import version

        typer.echo(f"rekey {version(DISTRIBUTION)}")
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
    from kafka_rekey.services.observability.librdkafka import route_client_logs

    route_client_logs(True)  # `rekey run` turns it off again for its service
    # Undone when the command ends, for a caller that runs commands in-process (the tests).
    ctx.call_on_close(lambda: route_client_logs(False))
    if verbose:
        from kafka_rekey.services.observability.librdkafka import hide_librdkafka_logs, show_librdkafka_logs

        handler = show_librdkafka_logs(logging.WARNING if verbose == 1 else logging.DEBUG)
        ctx.call_on_close(lambda: hide_librdkafka_logs(handler))


for panel, modules in PANELS.items():
    for module in modules:
        known = len(app.registered_commands), len(app.registered_groups)
        module.register(app)
        for info in [*app.registered_commands[known[0]:], *app.registered_groups[known[1]:]]:
            info.rich_help_panel = panel


@functools.cache
def with_plugins() -> typer.Typer:
    """`app` with the commands of every installed plugin distribution (once); a development command no plugin
    provides gets a stand-in that says which distribution to install."""
    from importlib.metadata import entry_points

    for entry_point in entry_points(group=PLUGIN_GROUP):
        try:
            register = entry_point.load()
        except ImportError as error:  # a plugin installed for another interpreter, or half uninstalled
            from kafka_rekey.services.console import make_console

            source = entry_point.dist.name if entry_point.dist else entry_point.value
            make_console(stderr=True).print(f"warning: the commands of {source} could not be loaded: {error}",
                                            highlight=False)
            continue
        register(app)
    present = {info.name for info in app.registered_commands} | {info.name for info in app.registered_groups}
    for name, summary in DEV_COMMANDS.items():
        if name not in present:
            app.command(name=name, help=summary, rich_help_panel=DEV_PANEL, add_help_option=False,
                        context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
                _needs_dev_distribution)
    return app


def _needs_dev_distribution(ctx: typer.Context) -> None:
    from kafka_rekey.services.cli.errors import ExitCode
    from kafka_rekey.services.console import make_console

    make_console(stderr=True).print(
        f"[bold red]error:[/] `rekey {ctx.info_name}` is a development command: install {DEV_DISTRIBUTION} "
        f"(pip install {DEV_DISTRIBUTION})", highlight=False)
    raise typer.Exit(ExitCode.FAILED)


def main() -> None:
    """Run the CLI. A command line that names its command builds only that command: typer inspects the signature
    of every registered command at each start (about 0.1 s for all of them), which a quick command such as
    `rekey partition` should not pay. Without a command (`rekey --help`) every command is built."""
    named = _named_command(sys.argv[1:])
    if named not in _BUILT_IN and sys.argv[1:] != ["--version"]:
        with_plugins()
    commands = {info.name or info.callback.__name__.replace("_", "-"): info
                for info in app.registered_commands if info.callback is not None}
    groups = {info.name: info for info in app.registered_groups}
    if named in commands or named in groups or sys.argv[1:] == ["--version"]:
        app.registered_commands = [commands[named]] if named in commands else []
        app.registered_groups = [groups[named]] if named in groups else []
    app()


_BUILT_IN = {info.name for info in app.registered_commands} | {info.name for info in app.registered_groups}


def _named_command(args: list[str]) -> str | None:
    """The first argument that is not a root option (or the value of `--config`)."""
    remaining = iter(args)
    for arg in remaining:
        if arg == "--config":
            next(remaining, None)
        elif not arg.startswith("-"):
            return arg
    return None

"""`rekey registry start|status|stop`: the embedded Confluent-compatible schema registry (Apicurio Registry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import make_console
from kafka_rekey_dev.embedded.defaults import REGISTRY_DATA_DIR as DEFAULT_DATA_DIR
from kafka_rekey_dev.embedded.defaults import REGISTRY_PORT as DEFAULT_PORT

registry_app = typer.Typer(
    help="Run a Confluent-API-compatible schema registry (Apicurio Registry) on 127.0.0.1.", no_args_is_help=True
)
DataDir = Annotated[Path, typer.Option("--data-dir", help="Where the registry keeps its database and log.")]


@registry_app.command()
def start(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    port: Annotated[
        int | None, typer.Option("--port", help=f"HTTP port on 127.0.0.1 [default: last used, else {DEFAULT_PORT}]")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the registry to answer.")] = 90.0,
) -> None:
    """Start the registry (fetching it from Maven Central the first time) and wait until it answers."""
    from kafka_rekey_dev.embedded.registry import SchemaRegistryServer

    console = make_console()
    with user_errors():
        server = SchemaRegistryServer(data_dir, port=port)
        with console.status(f"starting the schema registry in {server.data_dir} ..."):
            server.start(timeout=timeout)
    console.print(f"Schema registry ready: [bold]{server.url}[/] (export REKEY_REGISTRY_URL={server.url})")


@registry_app.command()
def status(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Print the registry's URL, process id and readiness (JSON). Exit 3 if it is not answering."""
    from kafka_rekey_dev.embedded.registry import SchemaRegistryServer

    report = SchemaRegistryServer(data_dir).status()
    typer.echo(json.dumps(report, indent=2))
    if not report["ready"]:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


@registry_app.command()
def stop(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Stop the registry (SIGTERM, then SIGKILL after 30 s). Schemas stay in --data-dir."""
    from kafka_rekey_dev.embedded.registry import SchemaRegistryServer

    server = SchemaRegistryServer(data_dir)
    server.stop()
    make_console().print(f"Schema registry stopped; data kept in {server.data_dir}")


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(registry_app, name="registry", rich_help_panel=panel)

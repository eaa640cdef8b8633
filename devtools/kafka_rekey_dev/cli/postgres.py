"""`rekey postgres start|status|stop`: the embedded PostgreSQL server used by the demo and the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import make_console
from kafka_rekey_dev.embedded.defaults import POSTGRES_DATA_DIR as DEFAULT_DATA_DIR
from kafka_rekey_dev.embedded.defaults import POSTGRES_OS_USER as DEFAULT_OS_USER
from kafka_rekey_dev.embedded.defaults import POSTGRES_PORT as DEFAULT_PORT

postgres_app = typer.Typer(help="Run an embedded PostgreSQL server on 127.0.0.1.", no_args_is_help=True)
DataDir = Annotated[Path, typer.Option("--data-dir", help="Where the server keeps its data, log and socket.")]


@postgres_app.command()
def start(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    port: Annotated[int, typer.Option("--port", help="TCP port on 127.0.0.1 (first start only).")] = DEFAULT_PORT,
    os_user: Annotated[str, typer.Option("--os-user", help="Unprivileged user to run as when we are root.")] = (
        DEFAULT_OS_USER
    ),
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the server to accept connections.")] = 60.0,
) -> None:
    """Initialise the data directory on first use, start the server and wait until it accepts connections."""
    from kafka_rekey_dev.embedded.postgres import PostgresServer

    console = make_console()
    with user_errors():
        server = PostgresServer(data_dir, port=port, os_user=os_user)
        with console.status(f"starting PostgreSQL in {server.data_dir} ..."):
            server.start(timeout=timeout)
    console.print(f"PostgreSQL ready: [bold]{server.dsn}[/]")


@postgres_app.command()
def status(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Print the server's port, process id, DSN and whether it accepts connections (JSON). Exit 3 if not."""
    from kafka_rekey_dev.embedded.postgres import PostgresServer

    with user_errors():
        report = PostgresServer(data_dir).status()
    typer.echo(json.dumps(report, indent=2))
    if not report["accepting"]:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


@postgres_app.command()
def stop(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Stop the server (fast shutdown). Data stays in --data-dir."""
    from kafka_rekey_dev.embedded.postgres import PostgresServer

    with user_errors():
        server = PostgresServer(data_dir)
        server.stop()
    make_console().print(f"PostgreSQL stopped; data kept in {server.data_dir}")


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(postgres_app, name="postgres", rich_help_panel=panel)

"""`rekey connect start|status|stop`: the embedded Kafka Connect worker with Debezium's PostgreSQL connector."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import make_console
from kafka_rekey_dev.embedded.defaults import CONNECT_DATA_DIR as DEFAULT_DATA_DIR
from kafka_rekey_dev.embedded.defaults import CONNECT_PORT as DEFAULT_PORT
from kafka_rekey_dev.embedded.defaults import KAFKA_BASE_PORT

connect_app = typer.Typer(
    help="Run a Kafka Connect worker with Debezium's PostgreSQL connector on 127.0.0.1.", no_args_is_help=True
)
DataDir = Annotated[Path, typer.Option("--data-dir", help="Where the worker keeps its properties and log.")]


@connect_app.command()
def start(
    bootstrap: Annotated[str | None, typer.Option(
        "--bootstrap", "-b",
        help=f"The broker holding the worker's topics [default: last used, else 127.0.0.1:{KAFKA_BASE_PORT}]")] = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    port: Annotated[
        int | None, typer.Option("--port", help=f"REST port on 127.0.0.1 [default: last used, else {DEFAULT_PORT}]")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the worker to become ready.")] = 120.0,
) -> None:
    """Start the worker (fetching its jars from Maven Central the first time) and wait until it is ready."""
    from kafka_rekey_dev.embedded.connect import ConnectWorker

    console = make_console()
    with user_errors():
        worker = ConnectWorker(data_dir, bootstrap_servers=bootstrap, port=port)
        with console.status(f"starting the Connect worker in {worker.data_dir} ..."):
            worker.start(timeout=timeout)
    console.print(f"Kafka Connect ready: [bold]{worker.url}[/] (broker {worker.state.bootstrap_servers})")


@connect_app.command()
def status(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Print the worker's URL, broker, process id, readiness and connectors (JSON). Exit 3 if it is not ready."""
    from kafka_rekey_dev.embedded.connect import ConnectWorker

    report = ConnectWorker(data_dir).status()
    typer.echo(json.dumps(report, indent=2))
    if not report["ready"]:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


@connect_app.command()
def stop(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Stop the worker (SIGTERM, then SIGKILL after 30 s). Connectors and offsets stay in its broker topics."""
    from kafka_rekey_dev.embedded.connect import ConnectWorker

    worker = ConnectWorker(data_dir)
    worker.stop()
    make_console().print(f"Kafka Connect stopped; its connectors and offsets stay on {worker.state.bootstrap_servers}")


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(connect_app, name="connect", rich_help_panel=panel)

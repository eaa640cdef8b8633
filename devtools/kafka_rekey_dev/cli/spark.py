"""`rekey spark start|status|stop`: an embedded Spark standalone cluster for the backfill and verify jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import make_console
from kafka_rekey_dev.embedded.defaults import SPARK_DATA_DIR as DEFAULT_DATA_DIR
from kafka_rekey_dev.embedded.defaults import SPARK_PORT as DEFAULT_PORT
from kafka_rekey_dev.embedded.defaults import SPARK_UI_PORT as DEFAULT_UI_PORT

spark_app = typer.Typer(
    help="Run a Spark standalone cluster (a master, two one-core workers) on 127.0.0.1.", no_args_is_help=True
)
DataDir = Annotated[Path, typer.Option("--data-dir", help="Where the cluster keeps its state, logs and work dirs.")]


@spark_app.command()
def start(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    port: Annotated[int | None, typer.Option(
        "--port", help=f"Master port on 127.0.0.1 [default: last used, else {DEFAULT_PORT}]")] = None,
    ui_port: Annotated[int | None, typer.Option(
        "--ui-port", help=f"Master web UI / JSON port [default: last used, else {DEFAULT_UI_PORT}]")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the workers to register.")] = 90.0,
) -> None:
    """Start the master and two workers and wait until both workers have registered with the master."""
    from kafka_rekey_dev.embedded.spark import WORKERS, SparkCluster

    console = make_console()
    with user_errors():
        cluster = SparkCluster(data_dir, port=port, ui_port=ui_port)
        with console.status(f"starting a Spark master and {WORKERS} workers in {cluster.data_dir} ..."):
            cluster.start(timeout=timeout)
        properties = cluster.write_job_properties()
    console.print(f"Spark cluster ready: [bold]{cluster.master_url}[/] (UI {cluster.ui_url}); run a job on it with "
                  f"`rekey backfill --master {cluster.master_url} --properties-file {properties} ...`", highlight=False)


@spark_app.command()
def status(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Print the master, its workers and running applications (JSON). Exit 3 if the cluster is not ready."""
    from kafka_rekey_dev.embedded.spark import SparkCluster

    report = SparkCluster(data_dir).status()
    typer.echo(json.dumps(report, indent=2))
    if not report["ready"]:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


@spark_app.command()
def stop(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Stop the workers (with their executors) and the master: SIGTERM, then SIGKILL after 30 s."""
    from kafka_rekey_dev.embedded.spark import SparkCluster

    cluster = SparkCluster(data_dir)
    cluster.stop()
    make_console().print(f"Spark cluster stopped ({cluster.master_url})")


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(spark_app, name="spark", rich_help_panel=panel)

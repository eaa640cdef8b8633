"""`rekey broker start|status|stop`: the embedded KRaft cluster used by the demo and the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import make_console
from kafka_rekey_dev.embedded.defaults import KAFKA_BASE_PORT as DEFAULT_BASE_PORT
from kafka_rekey_dev.embedded.defaults import KAFKA_DATA_DIR as DEFAULT_DATA_DIR

broker_app = typer.Typer(help="Run an embedded Apache Kafka (KRaft) cluster on 127.0.0.1.", no_args_is_help=True)
DataDir = Annotated[Path, typer.Option("--data-dir", help="Where the cluster keeps its data and logs.")]


@broker_app.command()
def start(
    nodes: Annotated[int, typer.Option("--nodes", help="1, or 3 for replication/fault tests.")] = 1,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    port: Annotated[int, typer.Option("--port", help="Broker port of node 1; node N uses port+N-1.")] = (
        DEFAULT_BASE_PORT
    ),
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the cluster to become ready.")] = 90.0,
) -> None:
    """Start the cluster (resolving the Kafka jars from Maven Central the first time) and wait until ready."""
    from kafka_rekey_dev.embedded.kafka import KafkaCluster

    console = make_console()
    with user_errors():
        cluster = KafkaCluster(data_dir, nodes=nodes, base_port=port)
        with console.status(f"starting {cluster.state.nodes}-node Kafka cluster in {cluster.data_dir} ..."):
            cluster.start(timeout=timeout)
    console.print(f"Kafka ready: [bold]{cluster.bootstrap_servers}[/]")


@broker_app.command()
def status(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Print the cluster's nodes, process ids and whether each is listening (JSON). Exit 3 if any is down."""
    from kafka_rekey_dev.embedded.kafka import KafkaCluster

    cluster = KafkaCluster(data_dir)
    report = cluster.status()
    typer.echo(json.dumps(report, indent=2))
    if not all(node["listening"] for node in report["nodes"]):  # type: ignore[attr-defined]
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


@broker_app.command()
def stop(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Stop every node (SIGTERM, then SIGKILL after 30 s). Data stays in --data-dir."""
    from kafka_rekey_dev.embedded.kafka import KafkaCluster

    cluster = KafkaCluster(data_dir)
    cluster.stop()
    make_console().print(f"Kafka stopped; data kept in {cluster.data_dir}")


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(broker_app, name="broker", rich_help_panel=panel)

"""The stack `rekey chaos` runs on: the demo's embedded stack for one broker, or a 3-node cluster with every
catalog topic at RF=3 and min.insync.replicas=2 (and the internal topics at RF=3) for the broker scenario."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.topics.apply import apply_catalog
from kafka_rekey_dev.chaos.harness import ChaosEnv
from kafka_rekey_dev.demo.stack import demo_stack
from kafka_rekey_dev.embedded.kafka import KafkaCluster, free_base_port
from kafka_rekey_dev.embedded.processes import free_port
from kafka_rekey_dev.embedded.registry import SchemaRegistryServer


@contextlib.contextmanager
def chaos_stack(workdir: Path, catalog_path: Path, nodes: int, console: Console) -> Iterator[ChaosEnv]:
    if nodes == 1:
        with demo_stack(workdir, catalog_path, console) as stack:
            yield ChaosEnv(stack.bootstrap, stack.registry_url, catalog_path, stack.catalog, workdir / "runs")
        return
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    cluster = KafkaCluster(workdir / "kafka", nodes=3, base_port=free_base_port(3, 19092), die_with_caller=True)
    registry = SchemaRegistryServer(workdir / "registry", port=free_port(8081))
    try:
        with console.status("starting a 3-node Apache Kafka cluster (KRaft) ..."):
            cluster.start(timeout=120)
        console.print(f"[green]✓[/] Kafka {cluster.bootstrap_servers}")
        with console.status("starting the schema registry ..."):
            registry.start(timeout=180, die_with_caller=True)
        catalog = load_catalog(catalog_path)
        apply_catalog(catalog, {"bootstrap.servers": cluster.bootstrap_servers}, replication_factor=3,
                      min_insync_replicas=2)
        console.print("[green]✓[/] catalog topics at RF=3, min.insync.replicas=2")
        yield ChaosEnv(cluster.bootstrap_servers, registry.url, catalog_path, catalog, workdir / "runs",
                       cluster=cluster, internal_replication=3)
    finally:
        with console.status("stopping ..."):
            registry.stop()
            cluster.stop()

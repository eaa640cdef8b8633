"""The demo's embedded stack: Kafka, the schema registry, the catalog's topics, and rekey's own services."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.topics.apply import apply_catalog
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.embedded.kafka import KafkaCluster, free_base_port
from kafka_rekey_dev.embedded.processes import free_port
from kafka_rekey_dev.embedded.registry import SchemaRegistryServer
from kafka_rekey_dev.embedded.workers import ServiceProcess


@dataclass
class DemoStack:
    workdir: Path
    catalog_path: Path
    catalog: Catalog
    bootstrap: str
    registry_url: str

    @property
    def kafka_config(self) -> dict[str, object]:
        return {"bootstrap.servers": self.bootstrap}

    def service_env(self) -> dict[str, str]:
        return {
            "REKEY_KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "REKEY_REGISTRY_URL": self.registry_url,
            "REKEY_CATALOG_PATH": str(self.catalog_path),
            "REKEY_DATA_DIR": str(self.workdir / "state"),
            "REKEY_STATE_STORE": "rocksdb",
        }

    @contextlib.contextmanager
    def service(self, name: str, **env: str) -> Iterator[ServiceProcess]:
        process = ServiceProcess(name, {**self.service_env(), **env}, self.workdir)
        try:
            yield process.start()
        finally:
            process.stop()


@contextlib.contextmanager
def demo_stack(workdir: Path, catalog_path: Path, console: Console) -> Iterator[DemoStack]:
    """Start a fresh Kafka + registry in `workdir`, create the catalog's topics; stop everything on exit."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    cluster = KafkaCluster(workdir / "kafka", nodes=1, base_port=free_base_port(1, 9092), die_with_caller=True)
    registry = SchemaRegistryServer(workdir / "registry", port=free_port(8081))
    try:
        with console.status("starting Apache Kafka (KRaft) ..."):
            cluster.start()
        console.print(f"[green]✓[/] Kafka {cluster.bootstrap_servers}")
        with console.status("starting the schema registry (Apicurio, Confluent API) ..."):
            registry.start(timeout=180, die_with_caller=True)
        console.print(f"[green]✓[/] schema registry {registry.url}")
        catalog = load_catalog(catalog_path)
        report = apply_catalog(catalog, {"bootstrap.servers": cluster.bootstrap_servers})
        console.print(f"[green]✓[/] catalog v{catalog.version}: {len(report.created)} topics created")
        yield DemoStack(workdir, catalog_path, catalog, cluster.bootstrap_servers, registry.url)
    finally:
        with console.status("stopping ..."):
            registry.stop()
            cluster.stop()

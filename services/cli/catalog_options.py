"""Options shared by the catalog-driven commands: `--catalog` and `--bootstrap-server` (`-b`, as Kafka's tools)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from kafka_rekey.services.settings import KafkaSettings
    from kafka_rekey.shared.catalog import Catalog

CatalogOption = Annotated[
    Path | None,
    typer.Option("--catalog", help="Topic catalog YAML [default: REKEY_CATALOG_PATH, else catalog/topics.yaml]."),
]
BootstrapOption = Annotated[
    str | None,
    typer.Option("--bootstrap-server", "--bootstrap-servers", "-b",
                 help="Kafka host:port list [default: REKEY_KAFKA_BOOTSTRAP_SERVERS]."),
]


def open_catalog(path: Path | None) -> Catalog:
    from kafka_rekey.services.catalog_files import load_catalog
    from kafka_rekey.services.settings import ServiceSettings

    return load_catalog(path or ServiceSettings().catalog_path)


def kafka_settings(bootstrap_servers: str | None) -> KafkaSettings:
    """`REKEY_KAFKA_*` settings, with the bootstrap servers replaced when given on the command line."""
    from kafka_rekey.services.settings import KafkaSettings

    settings = KafkaSettings()
    if bootstrap_servers:
        settings = settings.model_copy(update={"bootstrap_servers": bootstrap_servers})
    return settings

"""The development commands `rekey` loads from this distribution (entry point group `kafka_rekey.commands`)."""

from __future__ import annotations

import typer

from kafka_rekey_dev.cli import bench, broker, chaos, connect, dashboard, demo, postgres, registry, spark

PANEL = "Development (kafka-rekey-dev)"


def register(app: typer.Typer) -> None:
    """Add the development commands to `app`, in their own help panel."""
    for module in (demo, broker, registry, postgres, connect, spark, bench, chaos, dashboard):
        module.register(app, PANEL)

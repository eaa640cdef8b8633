"""`rekey partition KEY --partitions N`: the partition Java's default partitioner picks for a key."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from kafka_rekey.shared.partitioning import murmur2, partition_for


def partition(
    key: Annotated[str, typer.Argument(help="The logical key, e.g. org-1:interaction-9 (hashed as UTF-8).")],
    partitions: Annotated[int, typer.Option("--partitions", min=1, help="Partition count of the topic.")],
) -> None:
    """Print {"key", "murmur2", "partition"} as JSON: partition = toPositive(murmur2(utf8(key))) % N."""
    typer.echo(json.dumps({
        "key": key,
        "murmur2": murmur2(key.encode("utf-8")),
        "partition": partition_for(key, partitions),
    }))


def register(app: typer.Typer) -> None:
    app.command(name="partition")(partition)

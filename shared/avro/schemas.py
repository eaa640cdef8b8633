"""The Avro schemas shipped with rekey in `shared/schemas/*.avsc` (the domain contracts), read as package data."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

_PACKAGE = "kafka_rekey.shared"
_FOLDER = "schemas"


def schema_names() -> list[str]:
    """Names of the shipped schemas, e.g. `interaction_event`."""
    folder = resources.files(_PACKAGE).joinpath(_FOLDER)
    return sorted(entry.name.removesuffix(".avsc") for entry in folder.iterdir() if entry.name.endswith(".avsc"))


def load_schema(name: str) -> dict[str, Any]:
    """The JSON of `shared/schemas/<name>.avsc`."""
    resource = resources.files(_PACKAGE).joinpath(_FOLDER, f"{name}.avsc")
    if not resource.is_file():
        raise FileNotFoundError(f"no schema {name!r} in shared/schemas (shipped: {', '.join(schema_names())})")
    try:
        schema: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"shared/schemas/{name}.avsc is not valid JSON: {error}") from error
    return schema

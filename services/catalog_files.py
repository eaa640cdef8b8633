"""Read the topic catalog file (`REKEY_CATALOG_PATH`, `catalog/topics.yaml` by default) into a checked Catalog."""

from __future__ import annotations

from pathlib import Path

from kafka_rekey.shared.catalog import Catalog, parse_catalog


def display_path(path: Path) -> str:
    """`path` relative to the working directory when it is inside it (as users type it), else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_catalog(path: Path) -> Catalog:
    """The catalog in `path`. Raises FileNotFoundError naming the path, or `CatalogError` (a ValueError) whose
    lines read `<file>: topic '<name>': <field>: <problem>`."""
    if not path.is_file():
        raise FileNotFoundError(f"topic catalog {display_path(path)} not found (set --catalog or REKEY_CATALOG_PATH)")
    return parse_catalog(path.read_text(encoding="utf-8"), display_path(path))

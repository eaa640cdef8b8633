"""Dependencies point down: read from every module's import statements (top-level and inside functions alike),
parsed with `ast`. The product never imports the development tooling; the live services never import the backfill;
the pure core imports nothing else of rekey and no I/O client; and no module imports itself round a cycle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
ROOT = "kafka_rekey"
FOLDERS = ("services", "shared", "spark_backfill")
IO_CLIENTS = ("confluent_kafka", "httpx", "psycopg", "pyspark", "rocksdict", "prometheus_client", "sqlite3")


def _modules() -> dict[str, Path]:
    modules = {}
    for folder in FOLDERS:
        for path in (CHECKOUT / folder).rglob("*.py"):
            parts = path.relative_to(CHECKOUT).with_suffix("").parts
            modules[".".join((ROOT, *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return modules


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every module `name` imports: `import a.b` gives a.b, `from a import b` gives a and a.b (b may be a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


IMPORTS = {name: set(_imports(name, path)) for name, path in MODULES.items()}


def _offenders(importers: str | tuple[str, ...], imported: tuple[str, ...],
               except_in: tuple[str, ...] = ()) -> dict[str, list[str]]:
    found = {}
    for name, imports in IMPORTS.items():
        if name.startswith(importers) and not name.startswith(except_in or ("\0",)):
            bad = sorted(module for module in imports if module == imported or module.startswith(imported))
            if bad:
                found[name] = bad
    return found


def test_the_modules_are_found() -> None:
    assert {"kafka_rekey.services.cli.main", "kafka_rekey.shared.pipeline", "kafka_rekey.services.acl.app",
            "kafka_rekey.spark_backfill.jobs.backfill"} <= set(MODULES)


def test_every_import_of_rekey_goes_through_the_one_root() -> None:
    assert _offenders(ROOT, tuple(f"{folder}." for folder in FOLDERS) + FOLDERS) == {}


def test_the_product_never_imports_the_development_tooling_or_the_tests() -> None:
    assert _offenders(ROOT, ("kafka_rekey_dev", "tests")) == {}


def test_the_live_services_never_import_the_backfill_or_spark() -> None:
    assert _offenders(f"{ROOT}.services.", (f"{ROOT}.spark_backfill", "pyspark"),
                      except_in=(f"{ROOT}.services.cli.",)) == {}


def test_the_pure_core_imports_no_other_part_of_rekey_and_no_io_client() -> None:
    assert _offenders(f"{ROOT}.shared", (f"{ROOT}.services", f"{ROOT}.spark_backfill", *IO_CLIENTS)) == {}


def test_no_module_imports_itself_round_a_cycle() -> None:
    graph = {name: {module for module in imports if module in MODULES and module != name}
             for name, imports in IMPORTS.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for module in sorted(graph[name]):
            if state.get(module) == 1:
                cycles.append([*path[path.index(module):], module])
            elif module not in state:
                visit(module, [*path, module])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_rules_see_function_level_imports() -> None:
    """The CLI imports the backfill job inside its command (which the live-services rule exempts): found."""
    assert "kafka_rekey.services.cli.backfill" in _offenders(f"{ROOT}.services.", (f"{ROOT}.spark_backfill",))

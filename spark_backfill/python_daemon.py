"""PySpark's Python worker daemon, run with Spark's bundled copies of pyspark and py4j off the workers' path.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip`, py4j's zip and its core jar in front of every Python worker's
`sys.path`, and PySpark calls `importlib.invalidate_caches()` at the start of every task, which makes each zip
importer over those archives (one per package imported from them) re-read its archive's directory. When the
interpreter has pyspark and py4j installed itself (a local run from this venv, the backfill image), the archives
are a slower copy of the same code: the local session names this module as `spark.python.daemon.module` (Spark's
hook for a custom daemon), which drops them and then runs PySpark's own daemon. Where the interpreter lacks
either package, the path is left as Spark built it.

The daemon also imports what every backfill task imports before it forks the workers, so the workers share one
import instead of each doing its own, and keeps the bytecode it compiles in a cache of its own (`pycache_directory`)
where the environment says not to write `.pyc` files next to the sources (`PYTHONDONTWRITEBYTECODE`, as a checkout
is run here): without it every worker of every job compiled rekey's modules again.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys

BUNDLED_DIRECTORIES = (("python", "lib"), ("jars",))
PRELOADED = ("pyarrow", "confluent_kafka", "pyspark.worker", "kafka_rekey.shared.pipeline",
             "kafka_rekey.spark_backfill.transform",
             "kafka_rekey.spark_backfill.kafka_ranges", "kafka_rekey.spark_backfill.sink")


def without_bundled_spark(path: list[str], spark_home: str | None) -> list[str]:
    """`path` without the archives Spark bundles under `spark_home`, if pyspark and py4j import without them."""
    if not spark_home:
        return path
    bundled = {os.path.join(spark_home, *parts) for parts in BUNDLED_DIRECTORIES}
    kept = [entry for entry in path if os.path.dirname(entry) not in bundled]
    installed = all(importlib.machinery.PathFinder.find_spec(name, kept) is not None for name in ("pyspark", "py4j"))
    return kept if installed else path


def pycache_directory() -> str:
    """Where the workers keep compiled bytecode when the environment forbids `__pycache__` beside the sources."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rekey", "pycache")


def main() -> None:
    sys.path[:] = without_bundled_spark(sys.path, os.environ.get("SPARK_HOME"))
    if sys.dont_write_bytecode and sys.pycache_prefix is None:
        sys.pycache_prefix, sys.dont_write_bytecode = pycache_directory(), False
    for name in PRELOADED:
        importlib.import_module(name)
    from pyspark import daemon

    daemon.manager()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()

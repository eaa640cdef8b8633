"""PySpark's Python worker daemon, run with Spark's bundled copies of pyspark and py4j off the workers' path.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip`, py4j's zip and its core jar in front of every Python worker's
`sys.path`, and PySpark calls `importlib.invalidate_caches()` at the start of every task, which makes each zip
importer over those archives (one per package imported from them) re-read its archive's directory. When the
interpreter has pyspark and py4j installed itself (a local run from this venv, the backfill image), the archives
are a slower copy of the same code: the local session names this module as `spark.python.daemon.module` (Spark's
hook for a custom daemon), which drops them and then runs PySpark's own daemon. Where the interpreter lacks
either package, the path is left as Spark built it.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

BUNDLED_DIRECTORIES = (("python", "lib"), ("jars",))


def without_bundled_spark(path: list[str], spark_home: str | None) -> list[str]:
    """`path` without the archives Spark bundles under `spark_home`, if pyspark and py4j import without them."""
    if not spark_home:
        return path
    bundled = {os.path.join(spark_home, *parts) for parts in BUNDLED_DIRECTORIES}
    kept = [entry for entry in path if os.path.dirname(entry) not in bundled]
    installed = all(importlib.machinery.PathFinder.find_spec(name, kept) is not None for name in ("pyspark", "py4j"))
    return kept if installed else path


def main() -> None:
    sys.path[:] = without_bundled_spark(sys.path, os.environ.get("SPARK_HOME"))
    from pyspark import daemon

    daemon.manager()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()

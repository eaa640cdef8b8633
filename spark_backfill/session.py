"""One place that builds the SparkSession of every rekey Spark job (backfill, verify, bench, tests).

- `local[*]` by default; `--master k8s://...` (the Helm Job) or no master at all under spark-submit / the Spark
  Operator, where spark-submit already set `spark.master` and a master set here would override it.
- The Kafka connector (spark-sql-kafka-0-10 and its dependencies) comes from `spark_connector_jars()`, resolved
  once from Maven Central into `.cache/jars/`; `spark.jars` ships them to executors, nothing is fetched by ivy.
- Memory stays modest (driver 2g); shuffle partitions are small for local runs; the UI is off unless asked for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOCAL_SHUFFLE_PARTITIONS = 8

BASE_CONF: dict[str, str] = {
    "spark.driver.memory": "2g",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # mapInPandas batches: large enough to amortise the Python hop, small enough for 2 GB.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "5000",
    "spark.python.worker.reuse": "true",
    "spark.ui.showConsoleProgress": "true",
    # Kafka offsets are the identity of a source record: never silently skip lost ones.
    "spark.sql.files.ignoreCorruptFiles": "false",
}


def under_spark_submit() -> bool:
    """True when this Python process was started by spark-submit (PythonRunner), which has set the master."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def resolve_master(master: str | None) -> str | None:
    """The master to set: the given one, none under spark-submit, else `local[*]`."""
    if master:
        return master
    return None if under_spark_submit() else DEFAULT_MASTER


def spark_conf(master: str | None, *, ui: bool = False, extra: Mapping[str, str] | None = None,
               jars: list[str] | None = None) -> dict[str, str]:
    """The Spark properties a rekey job runs with (pure, so the CLI and tests can show and check them)."""
    conf = dict(BASE_CONF)
    conf["spark.ui.enabled"] = "true" if ui else "false"
    if master is None or master.startswith("local"):
        conf["spark.sql.shuffle.partitions"] = str(LOCAL_SHUFFLE_PARTITIONS)
        conf["spark.default.parallelism"] = str(max(2, os.cpu_count() or 2))
        # Executors are threads of this JVM: they must run this venv's Python, which has rekey installed.
        conf["spark.pyspark.python"] = sys.executable
        conf["spark.pyspark.driver.python"] = sys.executable
    if jars is not None:
        conf["spark.jars"] = ",".join(jars)
    conf.update(extra or {})
    return conf


def build_session(app_name: str, master: str | None = None, *, ui: bool = False,
                  conf: Mapping[str, str] | None = None, log_level: str = "WARN") -> SparkSession:
    """Get or create the SparkSession for a rekey job (see the module doc for what it configures)."""
    from pyspark.sql import SparkSession

    from services.devtools.embedded.maven import spark_connector_jars

    resolved = resolve_master(master)
    if resolved is None or resolved.startswith("local"):
        # PySpark starts local Python workers with $PYSPARK_PYTHON (default `python3` from PATH), not with
        # spark.pyspark.python: point it at this interpreter, whose environment has rekey, pyarrow, ...
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jars = [str(path) for path in spark_connector_jars()]
    builder = SparkSession.builder.appName(app_name)
    if resolved is not None:
        builder = builder.master(resolved)
    for key, value in spark_conf(resolved, ui=ui, extra=conf, jars=jars).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """`--conf key=value` options (as spark-submit takes them) into a dict; a pair without `=` is an error."""
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--conf expects key=value, got {pair!r}")
        conf[key.strip()] = value
    return conf

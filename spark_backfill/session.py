"""One place that builds the SparkSession of every rekey Spark job (backfill, verify, bench, tests).

- `local[*]` by default; `--master spark://...` (a standalone cluster) or `k8s://...` (the Helm Job), or no master
  at all under spark-submit / the Spark Operator, where spark-submit already set `spark.master` and a master set
  here would override it.
- The Kafka connector (spark-sql-kafka-0-10, spark-avro and their dependencies) comes from configuration, first
  found wins: `spark.jars` / `spark.jars.packages` among the given properties; the `jars` a caller passes (the
  dev stack's cached copies); `$REKEY_SPARK_JARS` (jar files or directories of jars, comma-separated); Spark's own
  `jars/` directory when it holds the connector (the backfill image); else `spark.jars.packages`, which Spark
  resolves from Maven Central. Under spark-submit its own `--jars` / `--packages` rule.
- Memory stays modest (driver 2g); shuffle partitions are small for local runs; the UI is off unless asked for.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOCAL_SHUFFLE_PARTITIONS = 8
JARS_ENV = "REKEY_SPARK_JARS"
CONNECTOR_ARTIFACTS = ("spark-sql-kafka-0-10_2.13", "spark-avro_2.13")

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
    # A speculative copy of a write task would run beside the attempt it copies, under the same transactional id.
    "spark.speculation": "false",
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
        # Python workers import pyspark from this venv, not from Spark's archives (see the module).
        conf["spark.python.daemon.module"] = "kafka_rekey.spark_backfill.python_daemon"
    if jars is not None:
        conf["spark.jars"] = ",".join(jars)
    conf.update(extra or {})
    return conf


def expand_jars(spec: str) -> list[str]:
    """`a.jar,dir,...` into jar paths: a directory stands for the jars in it."""
    jars: list[str] = []
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        path = Path(entry)
        jars.extend(sorted(str(jar) for jar in path.glob("*.jar")) if path.is_dir() else [entry])
    return jars


def spark_home() -> Path:
    """$SPARK_HOME, else the pyspark package (a pip-installed Spark)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).parent


def connector_conf(given: Mapping[str, str], jars: Sequence[str] | None = None) -> dict[str, str]:
    """The properties that put the Kafka connector on the driver's and executors' classpath (see the module doc)."""
    if under_spark_submit() or "spark.jars" in given or "spark.jars.packages" in given:
        return {}
    if jars:
        return {"spark.jars": ",".join(jars)}
    if os.environ.get(JARS_ENV):
        return {"spark.jars": ",".join(expand_jars(os.environ[JARS_ENV]))}
    if any((spark_home() / "jars").glob(f"{CONNECTOR_ARTIFACTS[0]}-*.jar")):
        return {}
    import pyspark

    return {"spark.jars.packages": ",".join(f"org.apache.spark:{artifact}:{pyspark.__version__}"
                                            for artifact in CONNECTOR_ARTIFACTS)}


def build_session(app_name: str, master: str | None = None, *, ui: bool = False,
                  conf: Mapping[str, str] | None = None, log_level: str = "WARN",
                  jars: Sequence[str] | None = None) -> SparkSession:
    """Get or create the SparkSession for a rekey job (see the module doc for what it configures)."""
    from pyspark.sql import SparkSession

    resolved = resolve_master(master)
    given = dict(conf or {})
    # A driver started here (not by spark-submit) has executors run $PYSPARK_PYTHON (default `python3` from
    # PATH) and ignores spark.pyspark.python: carry the property over, locally this venv's interpreter.
    if "spark.pyspark.python" in given:
        os.environ["PYSPARK_PYTHON"] = given["spark.pyspark.python"]
    elif resolved is None or resolved.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if resolved is not None:
        builder = builder.master(resolved)
    for key, value in spark_conf(resolved, ui=ui, extra={**connector_conf(given, jars), **given}).items():
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


def read_properties(path: Path) -> dict[str, str]:
    """A Spark properties file as spark-submit's `--properties-file` takes it: one `key value` or `key=value` per
    line, `#` and `!` comments. A line without a value is an error naming the file and line."""
    properties: dict[str, str] = {}
    for number, raw in enumerate(Path(path).read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        pair = re.match(r"([^=:\s]+)\s*[=:\s]\s*(\S.*)", line)
        if pair is None:
            raise ValueError(f"{path}:{number}: expected `key value` or `key=value`, got {line!r}")
        properties[pair[1]] = pair[2].strip()
    return properties

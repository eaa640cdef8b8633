"""Where a job's Kafka connector and executors' Python come from, without dev tooling: the given properties, the
jars a caller passes, $REKEY_SPARK_JARS, Spark's own jars/ directory, else Maven Central through
`spark.jars.packages`; and the session module imports nothing of kafka_rekey_dev."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_rekey.spark_backfill import session
from kafka_rekey.spark_backfill.session import JARS_ENV, connector_conf, expand_jars


@pytest.fixture
def plain_spark_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Spark distribution without the connector, no spark-submit, no $REKEY_SPARK_JARS."""
    (tmp_path / "jars").mkdir()
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv(JARS_ENV, raising=False)
    return tmp_path


def test_the_connector_comes_from_configuration_first_found_wins(
        plain_spark_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    packages = connector_conf({})["spark.jars.packages"].split(",")
    assert packages == [f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}",
                        f"org.apache.spark:spark-avro_2.13:{pyspark.__version__}"]
    assert connector_conf({"spark.jars.packages": "g:a:1"}) == {}
    assert connector_conf({"spark.jars": "/x.jar"}, jars=["/y.jar"]) == {}
    assert connector_conf({}, jars=["/y.jar", "/z.jar"]) == {"spark.jars": "/y.jar,/z.jar"}

    cached = tmp_path / "cache"
    cached.mkdir()
    for name in ("b.jar", "a.jar", "notes.txt"):
        (cached / name).write_text("")
    monkeypatch.setenv(JARS_ENV, f"{cached}, /opt/extra.jar")
    assert expand_jars(f"{cached}, /opt/extra.jar") == [str(cached / "a.jar"), str(cached / "b.jar"),
                                                        "/opt/extra.jar"]
    assert connector_conf({}) == {"spark.jars": f"{cached / 'a.jar'},{cached / 'b.jar'},/opt/extra.jar"}

    monkeypatch.delenv(JARS_ENV)
    (plain_spark_home / "jars" / "spark-sql-kafka-0-10_2.13-4.1.1.jar").write_text("")
    assert connector_conf({}) == {}  # the image: the connector is on Spark's own classpath
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "4242")
    assert connector_conf({}, jars=["/y.jar"]) == {}  # spark-submit's --jars / --packages rule


def test_a_cluster_job_gets_no_local_settings() -> None:
    conf = session.spark_conf("spark://127.0.0.1:7077", extra={"spark.pyspark.python": "/opt/py/bin/python"})
    assert "spark.sql.shuffle.partitions" not in conf and "spark.default.parallelism" not in conf
    assert conf["spark.pyspark.python"] == "/opt/py/bin/python"


def test_the_session_module_does_not_import_dev_tooling() -> None:
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, kafka_rekey.spark_backfill.session, kafka_rekey.spark_backfill.pyfiles; "
                               "print([m for m in sys.modules if m.startswith('kafka_rekey_dev')])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert imported == "[]"

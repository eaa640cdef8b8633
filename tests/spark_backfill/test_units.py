"""Pure parts of the Spark jobs: session settings, `--conf` parsing, the split Avro encoder, the bench doc."""

from __future__ import annotations

import random
from pathlib import Path

import pyspark
import pytest

from kafka_rekey.shared.avro import SplitEncoder, encode_body, frame, load_schema, parse_schema, zigzag_varint
from kafka_rekey.shared.handoff import OffsetRange
from kafka_rekey.spark_backfill.python_daemon import without_bundled_spark
from kafka_rekey.spark_backfill.session import parse_conf, read_properties, resolve_master, spark_conf


def test_master_is_local_unless_spark_submit_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert resolve_master(None) == "local[*]"
    assert resolve_master("k8s://https://kubernetes.default.svc") == "k8s://https://kubernetes.default.svc"
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "4242")
    assert resolve_master(None) is None


def test_spark_conf_is_modest_and_ships_the_connector() -> None:
    local = spark_conf("local[*]", jars=["/x/a.jar", "/x/b.jar"], extra={"spark.executor.memory": "1g"})
    assert local["spark.driver.memory"] == "2g"
    assert local["spark.ui.enabled"] == "false"
    assert int(local["spark.sql.shuffle.partitions"]) <= 8
    assert local["spark.jars"] == "/x/a.jar,/x/b.jar"
    assert local["spark.executor.memory"] == "1g"
    assert "spark.sql.shuffle.partitions" not in spark_conf("k8s://https://k", ui=True)
    assert local["spark.python.daemon.module"] == "kafka_rekey.spark_backfill.python_daemon"
    assert "spark.python.daemon.module" not in spark_conf("spark://127.0.0.1:7077")
    assert spark_conf("k8s://https://k", ui=True)["spark.ui.enabled"] == "true"


def test_python_workers_drop_sparks_bundled_archives_only_where_pyspark_is_installed(tmp_path: Path) -> None:
    home = str(tmp_path / "spark")
    bundled = [f"{home}/python/lib/pyspark.zip", f"{home}/python/lib/py4j-0.10.9.9-src.zip", f"{home}/jars/core.jar"]
    installed = str(Path(pyspark.__file__).parents[1])
    assert without_bundled_spark([*bundled, installed], home) == [installed]
    assert without_bundled_spark([*bundled, str(tmp_path)], home) == [*bundled, str(tmp_path)]
    assert without_bundled_spark(bundled, None) == bundled


def test_parse_conf() -> None:
    assert parse_conf(["spark.a=1", "spark.b=x=y"]) == {"spark.a": "1", "spark.b": "x=y"}
    with pytest.raises(ValueError, match="key=value"):
        parse_conf(["spark.a"])


def test_split_encoding_equals_whole_record_encoding() -> None:
    schema = load_schema("interaction_event")
    encoder, whole = SplitEncoder(schema), parse_schema(schema)
    rng = random.Random(3)
    for _ in range(200):
        record = {
            "org_id": f"org-{rng.randrange(9)}", "interaction_id": "i" * rng.randrange(1, 90),
            "event_id": "e", "event_type": "end", "interaction_type": rng.choice([None, "chat"]),
            "event_time": rng.randrange(0, 2**42), "sequence": rng.choice([1, rng.randrange(1, 2**40)]),
            "source": {"topic": "t", "partition": rng.randrange(64), "offset": rng.randrange(2**40)},
            "ordering_token": rng.randrange(-2**40, 2**40), "change_op": rng.choice([None, "u"]),
            "payload": "{}",
        }
        head, tail = encoder.encode_parts(record)
        assert SplitEncoder.assemble(7, head, record["sequence"], tail) == frame(7, encode_body(whole, record))
    assert zigzag_varint(0) == b"\x00" and zigzag_varint(64) == b"\x80\x01"


def test_split_encoding_holds_where_a_field_holds_the_marker_bytes() -> None:
    """The halves are cut from one encoding at the marker sequence's varint; a field holding the same bytes (a
    long of -2**63, raw bytes) before or after it must not move the cut."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "blob", "type": "bytes"}, {"name": "at", "type": "long"}, {"name": "sequence", "type": "long"},
        {"name": "token", "type": "long"}, {"name": "tail_blob", "type": "bytes"}]}
    encoder, whole = SplitEncoder(schema), parse_schema(schema)
    marker = zigzag_varint(-(2**63))
    assert marker == b"\xff" * 9 + b"\x01"
    plain = {"blob": b"x", "at": 1, "token": 2, "tail_blob": b"y"}
    for changed in ({}, {"blob": b"a" + marker + b"b"}, {"at": -(2**63)}, {"token": -(2**63)},
                    {"tail_blob": marker}, {"blob": marker, "tail_blob": marker * 2}):
        for sequence in (1, 300, 2**40):
            record = {**plain, **changed, "sequence": sequence}
            head, tail = encoder.encode_parts(record)
            assert SplitEncoder.assemble(7, head, sequence, tail) == frame(7, encode_body(whole, record)), changed


def test_split_encoder_refuses_a_schema_it_cannot_stamp() -> None:
    with pytest.raises(ValueError, match="no field 'sequence'"):
        SplitEncoder({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]})
    with pytest.raises(ValueError, match="plain long"):
        SplitEncoder({"type": "record", "name": "R", "fields": [{"name": "sequence", "type": ["null", "long"]}]})


def test_offset_range_round_trip() -> None:
    offsets = OffsetRange("src", {0: 5, 1: 0}, {0: 10, 1: 3})
    assert OffsetRange.from_json(offsets.to_json()) == offsets
    assert offsets.records == 8


def test_a_properties_file_reads_as_spark_submit_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "job.properties"
    path.write_text("# the cluster\nspark.master spark://h:7077\n! a comment\n\nspark.executor.memory=1g\n"
                    "spark.driver.extraJavaOptions  -Da=b -Dc=d\nspark.cores.max: 4\n")

    assert read_properties(path) == {"spark.master": "spark://h:7077", "spark.executor.memory": "1g",
                                     "spark.driver.extraJavaOptions": "-Da=b -Dc=d", "spark.cores.max": "4"}
    path.write_text("spark.master spark://h:7077\nspark.jars\n")
    with pytest.raises(ValueError, match=r"job.properties:2: expected `key value` or `key=value`, got 'spark.jars'"):
        read_properties(path)

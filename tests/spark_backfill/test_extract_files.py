"""Archived history (Parquet, JSON, Avro files) reads as the same normalised source rows as a Kafka topic."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_rekey.spark_backfill.extract import file_offsets, read_files

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("file_format", ["parquet", "json", "avro"])
def test_archived_files_read_as_source_rows(spark, tmp_path: Path, file_format: str) -> None:  # type: ignore[no-untyped-def]
    rows = [(p, o, f"k-{o}", f'{{"n": {o}}}', 1_700_000_000_000 + o, [("trace", f"t-{o}")])
            for p in range(2) for o in range(5, 8)]
    frame = spark.createDataFrame(rows, "partition int, offset long, key string, value string, timestamp long, "
                                        "headers array<struct<key: string, value: string>>")
    path = str(tmp_path / "archive")
    frame.write.format(file_format).save(path)

    source = read_files(spark, path, file_format, "cc.events")
    result = sorted(source.collect(), key=lambda r: (r["partition"], r["offset"]))
    assert [(r["topic"], r["partition"], r["offset"]) for r in result] == [("cc.events", p, o) for p, o, *_ in rows]
    first = result[0]
    assert (bytes(first["key"]), bytes(first["value"]), first["timestamp_ms"]) == (
        b"k-5", b'{"n": 5}', 1_700_000_000_005)
    assert [(h["key"], bytes(h["value"])) for h in first["headers"]] == [("trace", b"t-5")]
    offsets = file_offsets(source, "cc.events")
    assert (offsets.start, offsets.end) == ({0: 5, 1: 5}, {0: 8, 1: 8})


def test_archived_files_without_positions_are_refused(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spark.createDataFrame([("v",)], "value string").write.json(str(tmp_path / "bad"))
    with pytest.raises(ValueError, match="partition"):
        read_files(spark, str(tmp_path / "bad"), "json", "cc.events")

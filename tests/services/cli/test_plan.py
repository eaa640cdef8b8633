"""`rekey plan` on a Zipf-skewed sample shows the hot org and the fix; it can also sample a live topic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app
from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.settings import KafkaSettings
from tests.shared.planning.zipf import zipf_rows

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def flat(output: str) -> str:
    return " ".join(output.split())


def _write_csv(path: Path) -> Path:
    lines = ["org_id,interaction_id,weight", *(f"{r.org_id},{r.interaction_id},1" for r in zipf_rows())]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_plan_on_a_zipf_sample_names_the_hot_org_and_the_fix(tmp_path: Path) -> None:
    sample = _write_csv(tmp_path / "sample.csv")
    out = tmp_path / "plan"
    result = CliRunner().invoke(app, ["plan", "--sample", str(sample), "--peak-rate", "20000", "--partitions", "16",
                                      "--consumer-capacity", "2000", "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    output = flat(result.output)
    assert "skew under org: partition" in output and "mostly org-000" in output
    assert "recommend dedicated_topic for org-000" in output
    assert "recommend salt for org-001" in output
    report = json.loads((out / "plan.json").read_text())
    assert report["hot_orgs"][0]["org_id"] == "org-000"
    loads = {s["strategy"]: s for s in report["strategies"]}
    assert loads["org"]["skewed"] and not loads["org_interaction"]["skewed"]
    assert loads["salted"]["max_rate"] < loads["org"]["max_rate"] / 2
    assert len(loads["org"]["partition_rates"]) == 16
    assert {r["org_id"]: r["action"] for r in report["recommendations"]}["org-000"] == "dedicated_topic"
    assert (out / "partition_rates.png").read_bytes()[:8] == PNG_MAGIC


def test_plan_needs_exactly_one_sample(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", "--peak-rate", "1", "--partitions", "1", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "give exactly one of --sample FILE or --sample-topic TOPIC" in flat(result.output)


def test_plan_reports_a_bad_sample_line(tmp_path: Path) -> None:
    sample = tmp_path / "bad.jsonl"
    sample.write_text('{"org_id": "o", "interaction_id": "i"}\n{"org_id": "o"}\n')
    result = CliRunner().invoke(app, ["plan", "--sample", str(sample), "--peak-rate", "1", "--partitions", "1",
                                      "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "bad.jsonl: line 2: interaction_id: required" in flat(result.output)


@pytest.mark.broker
def test_plan_samples_a_live_topic(tmp_path: Path, kafka_bootstrap: str, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=4, prefix="plan")
    producer = make_producer(KafkaSettings(bootstrap_servers=kafka_bootstrap))
    for row in zipf_rows(rows=2_000):
        producer.produce(topic, key=f"{row.org_id}:{row.interaction_id}".encode(), value=b"{}")
    producer.produce(topic, key=b"not-a-composite-key", value=b"{}")
    assert producer.flush(30) == 0
    result = CliRunner().invoke(app, [
        "plan", "--sample-topic", topic, "--bootstrap-servers", kafka_bootstrap, "--peak-rate", "5000",
        "--partitions", "8", "--consumer-capacity", "1000", "--out", str(tmp_path / "plan"),
    ], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    output = flat(result.output)
    assert f"sampled 2001 records of {topic}; 1 keys were not org_id:interaction_id" in output
    assert json.loads((tmp_path / "plan" / "plan.json").read_text())["sample_rows"] == 2_000
    assert "org-000" in output


def test_plan_piped_to_a_file_is_not_cut_to_80_columns(tmp_path: Path) -> None:
    sample = _write_csv(tmp_path / "sample.csv")
    output = tmp_path / "plan.txt"
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    with output.open("w") as stdout:
        subprocess.run([str(Path(sys.executable).parent / "rekey"), "plan", "--sample", str(sample),
                        "--peak-rate", "20000", "--partitions", "16", "--out", str(tmp_path / "plan")],
                       stdout=stdout, env=env, check=True)
    lines = output.read_text().splitlines()
    header = next(line for line in lines if "strategy" in line)
    assert "…" not in output.read_text(), output.read_text()
    assert max(len(line) for line in lines) > 80  # the table kept its width
    assert {"strategy", "ordering"} <= set(header.replace("│", " ").split()), header
    assert not [line for line in lines if line != line.rstrip()]


"""`rekey partition` and `rekey explain` print JSON the shared functions agree with."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey_dev.embedded.maven import REPO_ROOT

runner = CliRunner()
CATALOG = str(REPO_ROOT / "catalog" / "topics.yaml")


def flat(output: str) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(output.split())


def test_partition_prints_java_hash_and_partition() -> None:
    result = runner.invoke(app, ["partition", "foobar", "--partitions", "12"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"key": "foobar", "murmur2": -790332482,
                                         "partition": (-790332482 & 0x7FFFFFFF) % 12}


def test_partition_refuses_zero_partitions() -> None:
    result = runner.invoke(app, ["partition", "k", "--partitions", "0"])
    assert result.exit_code == 2


def test_explain_default_family() -> None:
    result = runner.invoke(app, ["explain", "--org", "org-acme", "--interaction", "int-42", "--catalog", CATALOG])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "family": "interaction_events", "org_id": "org-acme", "interaction_id": "int-42",
        "topic": "interaction_events_high_v2", "key": "org-acme:int-42",
        "partition": partition_for("org-acme:int-42", 64), "tier": "high", "bucket": None,
        "strategy": "org_interaction", "catalog_version": 1,
    }


def test_explain_salted_family_shows_the_bucket() -> None:
    result = runner.invoke(app, ["explain", "--org", "org-globex", "--interaction", "int-42",
                                 "--topic-family", "org_timeline", "--catalog", CATALOG])
    assert result.exit_code == 0, result.output
    decided = json.loads(result.output)
    assert decided["bucket"] == partition_for("int-42", 16)
    assert decided["key"] == f"org-globex:{decided['bucket']}"
    assert decided["strategy"] == "salted"


def test_explain_unknown_family_and_bad_catalog(tmp_path: Path) -> None:
    result = runner.invoke(app, ["explain", "--org", "o", "--interaction", "i", "--topic-family", "nope",
                                 "--catalog", CATALOG])
    assert result.exit_code == 2
    assert "topic family 'nope' is not in catalog version 1" in flat(result.output)
    broken = tmp_path / "topics.yaml"
    broken.write_text((REPO_ROOT / "catalog/topics.yaml").read_text().replace("partitions: 8\n", "partitions: 0\n", 1))
    result = runner.invoke(app, ["explain", "--org", "o", "--interaction", "i", "--catalog", str(broken)])
    assert result.exit_code == 2
    assert "topics.yaml: topic 'interaction_events_low_v2': partitions: must be >= 1, got 0" in flat(result.output)


def test_explain_missing_catalog(tmp_path: Path) -> None:
    result = runner.invoke(app, ["explain", "--org", "o", "--interaction", "i",
                                 "--catalog", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "nope.yaml not found" in flat(result.output)

"""`rekey generate` against the real broker: traffic and manifest written, a missing topic named."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app
from tests.support.kafka import read_topic

pytestmark = pytest.mark.broker


def test_the_cli_writes_traffic_and_manifest(kafka_bootstrap: str, topic_factory: Callable[..., str],
                                             tmp_path: Path) -> None:
    topic = topic_factory(partitions=3, prefix="gen-cli")
    manifest = tmp_path / "cli.jsonl"
    result = CliRunner().invoke(app, [
        "generate", "--topic", topic, "--events", "500", "--orgs", "5", "--hot-orgs", "acme",
        "--malformed-rate", "0.1", "--duplicate-rate", "0.1", "--source-format", "debezium", "--seed", "4",
        "--manifest", str(manifest), "--bootstrap-servers", kafka_bootstrap,
    ])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert len(lines) == len(read_topic(kafka_bootstrap, topic)) == 500
    assert Counter(line["org_id"] for line in lines if line["kind"] == "event").most_common(1)[0][0] == "acme"

    missing = CliRunner().invoke(app, ["generate", "--topic", "no-such-topic-x2", "--events", "5",
                                       "--bootstrap-servers", kafka_bootstrap])
    assert missing.exit_code == 2 and "no-such-topic-x2" in missing.output

"""Full-scale generation (`make soak`): a million records, each on the topic and in the manifest.

How fast is measured by benchmarks, not asserted here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_rekey.services.generation import generate_to_topic
from tests.support.kafka import end_offsets

pytestmark = [pytest.mark.broker, pytest.mark.soak, pytest.mark.timeout(3600)]

MILLION = 1_000_000


def test_a_million_records_all_land_and_all_are_in_the_manifest(kafka_bootstrap: str, topic_factory: Callable[..., str],
                                                          tmp_path: Path) -> None:
    topic = topic_factory(partitions=12, prefix="gen-1m")
    manifest = tmp_path / "manifest.jsonl"
    summary = generate_to_topic(kafka_bootstrap, topic, MILLION, 2_000, hot_orgs=("acme", "globex"),
                                malformed_rate=0.01, duplicate_rate=0.02, manifest_path=manifest)
    assert summary.records == sum(end_offsets(kafka_bootstrap, topic).values()) == MILLION
    with manifest.open() as lines:
        assert sum(1 for _ in lines) == MILLION

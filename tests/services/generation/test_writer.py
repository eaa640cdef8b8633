"""generate_to_topic against the real broker: every manifest line names the partition and
offset holding exactly the planned record, and traffic spreads over all partitions."""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from kafka_rekey.services.generation import GenerationError, generate_to_topic
from kafka_rekey.shared.generation import GenerationConfig, RecordKind, generate
from kafka_rekey.shared.generation.config import GENERATED_FORMATS
from kafka_rekey.shared.translation import SourceFormat
from tests.support.kafka import read_topic

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("source_format", GENERATED_FORMATS)
def test_the_manifest_says_where_every_planned_record_landed(
    kafka_bootstrap: str, topic_factory: Callable[..., str], tmp_path: Path, source_format: SourceFormat
) -> None:
    topic = topic_factory(partitions=6, prefix="gen")
    manifest = tmp_path / "manifest.jsonl"
    options: dict[str, Any] = {"malformed_rate": 0.05, "duplicate_rate": 0.05, "late_rate": 0.05, "seed": 3}
    summary = generate_to_topic(kafka_bootstrap, topic, 3_000, 20, source_format=source_format,
                                manifest_path=manifest, **options)

    planned = {r.index: r for r in generate(GenerationConfig(events=3_000, orgs=20, source_format=source_format,
                                                             **options))}
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    landed = {(r.partition, r.offset): r for r in read_topic(kafka_bootstrap, topic)}
    assert len(lines) == len(landed) == summary.records == 3_000
    for line in lines:
        record, plan = landed[(line["partition"], line["offset"])], planned[line["index"]]
        assert (record.key, record.value) == (plan.key, plan.value)
        assert (line["kind"], line["event_id"], line["malformed_reason"], line["duplicate_of"]) == (
            plan.kind, plan.event_id, plan.malformed_reason, plan.duplicate_of)

    kinds = Counter(line["kind"] for line in lines)
    assert (summary.events, summary.duplicates, summary.tombstones) == (
        kinds[RecordKind.EVENT], kinds[RecordKind.DUPLICATE], kinds[RecordKind.TOMBSTONE])
    assert sum(summary.malformed.values()) == kinds[RecordKind.MALFORMED] > 0
    assert sorted(summary.partitions) == list(range(6)) and min(summary.partitions.values()) > 300
    if source_format is SourceFormat.DEBEZIUM:
        assert kinds[RecordKind.TOMBSTONE] > 0


def test_a_topic_created_a_moment_after_the_start_is_waited_for(kafka_bootstrap: str, kafka_admin) -> None:  # type: ignore[no-untyped-def]
    name = f"gen-late-{uuid.uuid4().hex[:8]}"
    creator = threading.Timer(1.0, lambda: kafka_admin.create_topics([NewTopic(name, 2, 1)])[name].result(30))
    creator.start()
    try:
        summary = generate_to_topic(kafka_bootstrap, name, 200, 2)
    finally:
        creator.join()
    assert summary.records == 200 == len(read_topic(kafka_bootstrap, name))


def test_a_missing_topic_is_named(kafka_bootstrap: str) -> None:
    with pytest.raises(GenerationError, match="topic 'no-such-topic-x1' is not available"):
        generate_to_topic(kafka_bootstrap, "no-such-topic-x1", 10, 2)

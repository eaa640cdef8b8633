"""Drift between a catalog topic and the topic as the cluster describes it."""

from __future__ import annotations

from kafka_rekey.shared.catalog import Drift, ObservedTopic, parse_catalog, topic_drift
from kafka_rekey_dev.embedded.maven import REPO_ROOT

LOW = parse_catalog((REPO_ROOT / "catalog/topics.yaml").read_text(), "catalog/topics.yaml").topic(
    "interaction_events_low_v2"
)


def _observed(partitions: int = 8, replication: int = 1, **configs: str) -> ObservedTopic:
    return ObservedTopic(LOW.name, partitions, replication, {**LOW.kafka_configs(), **configs})


def test_matching_topic_has_no_drift() -> None:
    assert topic_drift(LOW, _observed(**{"segment.bytes": "1073741824"})) == []


def test_cleanup_policy_order_does_not_matter() -> None:
    compacting = LOW.model_copy(update={"cleanup_policy": "compact,delete"})
    assert topic_drift(compacting, _observed(**{"cleanup.policy": "delete,compact"})) == []


def test_partitions_replication_and_configs_are_reported() -> None:
    drift = topic_drift(LOW, _observed(partitions=4, replication=3, **{"retention.ms": "1000"}))
    assert drift == [
        Drift(LOW.name, "partitions", "8", "4"),
        Drift(LOW.name, "replication_factor", "1", "3"),
        Drift(LOW.name, "retention.ms", "604800000", "1000"),
    ]


def test_missing_config_shows_unset() -> None:
    observed = ObservedTopic(LOW.name, 8, 1, {k: v for k, v in LOW.kafka_configs().items() if k != "retention.ms"})
    assert topic_drift(LOW, observed) == [Drift(LOW.name, "retention.ms", "604800000", "(unset)")]

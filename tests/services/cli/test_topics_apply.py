"""`rekey topics apply` against the real broker: create, idempotent re-run, drift, refused and allowed remap."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from typer.testing import CliRunner

from kafka_rekey.services.cli.errors import ExitCode
from kafka_rekey.services.cli.main import app
from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.partitioning import moved_keys
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

TOPIC_DOC = """
    description: test topic
    retention_reason: test
    ordering_scope: per interaction
    idempotency: key_sequence
    replay: reset the group
"""


def _topic(name: str, role: str, partitions: int, key: str = "org_interaction", extra: str = "") -> str:
    return f"""
  - name: {name}
    role: {role}
    partitions: {partitions}
    key: {{strategy: {key}, definition: test, expected_cardinality: 10}}
    schema_subject: {name}-value
    schema_compatibility: BACKWARD{TOPIC_DOC.rstrip()}{extra}"""


COMPACTED = "\n    cleanup_policy: compact\n    configs: {segment.ms: '600000'}"


def _source(name: str, managed: bool) -> str:
    return f"""
  - name: {name}
    format: ccaas-json
    feeds: [events]
    managed: {str(managed).lower()}
    partitions: 2
    key: {{strategy: custom, definition: event id, expected_cardinality: 10}}
    schema_subject: {name}-value
    schema_compatibility: BACKWARD{TOPIC_DOC.rstrip()}"""


def catalog_text(uid: str, events_partitions: int = 3) -> str:
    """A small catalog: one managed and one external source, one family topic, the four single-role topics."""
    topics = "".join([
        _topic(f"events_{uid}_v1", "family", events_partitions),
        _topic(f"dlq_{uid}_v1", "dead_letter", 1, "custom"),
        _topic(f"activity_{uid}_v1", "org_activity", 1, "org"),
        _topic(f"checkpoint_{uid}_v1", "checkpoint", 1, "custom", COMPACTED),
        _topic(f"recon_{uid}_v1", "reconciliation", 1, "none"),
    ])
    return f"""
version: 1
default_family: events
defaults: {{replication_factor: 1, min_insync_replicas: 1, cleanup_policy: delete, retention_ms: 3600000}}
sources:{_source(f"raw.{uid}", True)}{_source(f"upstream.{uid}", False)}
families:
  events:
    description: test family
    tiers: {{low: events_{uid}_v1}}
topics:{topics}
"""


def flat(output: str) -> str:
    """The output on one line, rich's table borders (box-drawing characters) and wrapping removed."""
    return " ".join(re.sub("[\u2500-\u257f]", " ", output).split())


class Apply:
    def __init__(self, tmp_path: Path, bootstrap: str) -> None:
        self.uid = uuid.uuid4().hex[:8]
        self.path = tmp_path / "topics.yaml"
        self.bootstrap = bootstrap
        self.events = f"events_{self.uid}_v1"
        self.write()

    def write(self, events_partitions: int = 3) -> None:
        self.path.write_text(catalog_text(self.uid, events_partitions))

    def __call__(self, *args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, ["topics", "apply", "--catalog", str(self.path),
                                          "--bootstrap-servers", self.bootstrap, *args], env={"COLUMNS": "250"})
        return result.exit_code, flat(result.output)


@pytest.fixture
def apply(tmp_path: Path, kafka_bootstrap: str) -> Apply:
    return Apply(tmp_path, kafka_bootstrap)


def _partitions(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


def _config(admin: AdminClient, topic: str, name: str) -> str | None:
    """The topic's config value, or None while a just-created topic is not yet known to the broker."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        return str(admin.describe_configs([resource])[resource].result(10)[name].value)
    except KafkaException:
        return None


def _created(admin: AdminClient, apply: Apply) -> None:
    wait_until(lambda: _config(admin, apply.events, "retention.ms") is not None, 20, f"{apply.events} described")


def test_creates_every_topic_then_reruns_idempotently(apply: Apply, kafka_admin: AdminClient) -> None:
    code, output = apply()
    assert code == ExitCode.OK, output
    assert "6 created, 0 unchanged" in output
    _created(kafka_admin, apply)
    assert f"upstream.{apply.uid} external" in output
    assert _partitions(kafka_admin, apply.events) == 3
    assert _config(kafka_admin, apply.events, "compression.type") == "lz4"
    assert _config(kafka_admin, apply.events, "retention.ms") == "3600000"
    assert _config(kafka_admin, f"checkpoint_{apply.uid}_v1", "cleanup.policy") == "compact"
    assert _config(kafka_admin, f"checkpoint_{apply.uid}_v1", "segment.ms") == "600000"
    assert f"upstream.{apply.uid}" not in kafka_admin.list_topics(timeout=10).topics

    code, output = apply()
    assert code == ExitCode.OK, output
    assert "0 created, 6 unchanged" in output


def test_config_drift_is_reported_not_changed(apply: Apply, kafka_admin: AdminClient) -> None:
    assert apply()[0] == ExitCode.OK
    _created(kafka_admin, apply)
    resource = ConfigResource(ResourceType.TOPIC, apply.events, incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
    ])
    kafka_admin.incremental_alter_configs([resource])[resource].result(10)
    wait_until(lambda: _config(kafka_admin, apply.events, "retention.ms") == "1000", 10, "retention altered")
    code, output = apply()
    assert code == ExitCode.PROBLEM_FOUND, output
    assert f"{apply.events} retention.ms 3600000 1000" in output
    assert _config(kafka_admin, apply.events, "retention.ms") == "1000"


def test_keyed_partition_increase_is_refused_with_moved_keys_then_allowed(
    apply: Apply, kafka_admin: AdminClient
) -> None:
    assert apply()[0] == ExitCode.OK
    keys = [f"org-{i % 5}:interaction-{i}".encode() for i in range(200)]
    producer = make_producer(KafkaSettings(bootstrap_servers=apply.bootstrap))
    for key in keys:
        producer.produce(apply.events, key=key, value=b"{}")
    assert producer.flush(30) == 0
    moved, _ = moved_keys(keys, 3, 5)

    apply.write(events_partitions=5)
    code, output = apply()
    assert code == ExitCode.PROBLEM_FOUND, output
    assert (f"refused: {apply.events} 3 -> 5 partitions would move {moved} of 200 sampled keys "
            f"({100 * moved / 200:.1f}%, topic sample)") in output
    assert _partitions(kafka_admin, apply.events) == 3

    code, output = apply("--allow-remap")
    assert code == ExitCode.OK, output
    assert f"{apply.events} 3 -> 5 {moved} of 200" in output and "increased" in output
    wait_until(lambda: _partitions(kafka_admin, apply.events) == 5, 10, "topic grown to 5 partitions")
    assert apply()[0] == ExitCode.OK


def test_empty_keyed_topic_estimates_with_synthetic_keys(apply: Apply) -> None:
    assert apply()[0] == ExitCode.OK
    apply.write(events_partitions=4)
    code, output = apply("--sample-size", "1000")
    assert code == ExitCode.PROBLEM_FOUND, output
    assert f"refused: {apply.events} 3 -> 4 partitions would move" in output
    assert "of 1000 sampled keys" in output and "synthetic sample" in output


def test_unkeyed_topic_grows_without_remap_flag(apply: Apply, kafka_admin: AdminClient) -> None:
    assert apply()[0] == ExitCode.OK
    apply.path.write_text(apply.path.read_text().replace(
        f"name: recon_{apply.uid}_v1\n    role: reconciliation\n    partitions: 1",
        f"name: recon_{apply.uid}_v1\n    role: reconciliation\n    partitions: 2",
    ))
    code, output = apply()
    assert code == ExitCode.OK, output
    wait_until(lambda: _partitions(kafka_admin, f"recon_{apply.uid}_v1") == 2, 10, "unkeyed topic grown")


def test_fewer_partitions_than_the_topic_is_drift(apply: Apply) -> None:
    assert apply()[0] == ExitCode.OK
    apply.write(events_partitions=2)
    code, output = apply("--allow-remap")
    assert code == ExitCode.PROBLEM_FOUND, output
    assert "Kafka cannot remove partitions" in output


def test_replication_override_beyond_the_cluster_is_a_kafka_error(apply: Apply) -> None:
    code, output = apply("--replication-factor", "3")
    assert code == ExitCode.FAILED, output
    assert "creating topic" in output


def test_min_isr_above_replication_is_invalid(apply: Apply) -> None:
    code, output = apply("--min-insync-replicas", "2")
    assert code == ExitCode.USAGE
    assert "min.insync.replicas 2 exceeds replication factor 1" in output


def test_unreachable_brokers(tmp_path: Path) -> None:
    apply = Apply(tmp_path, "127.0.0.1:1")
    code, output = apply("--wait-for-brokers", "1")
    assert code == ExitCode.FAILED, output
    assert "no Kafka broker answered at 127.0.0.1:1" in output

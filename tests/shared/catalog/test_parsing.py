"""Parsing the catalog: the repo's catalog and its accessors, and errors naming the file, the topic and field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from kafka_rekey.shared.catalog import CatalogError, parse_catalog
from kafka_rekey_dev.embedded.maven import REPO_ROOT

SOURCE = "catalog/topics.yaml"
TEXT = (REPO_ROOT / SOURCE).read_text()


def _topic(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in data["topics"] + data["sources"] if t["name"] == name)


def _errors(edit: Callable[[dict[str, Any]], None]) -> str:
    data = yaml.safe_load(TEXT)
    edit(data)
    with pytest.raises(CatalogError) as raised:
        parse_catalog(yaml.safe_dump(data, sort_keys=False), SOURCE)
    return str(raised.value)


def test_repo_catalog_and_its_accessors() -> None:
    catalog = parse_catalog(TEXT, SOURCE)
    assert catalog.version >= 1
    assert catalog.dlq_topic == "rekey_dead_letter_v1"
    assert catalog.org_activity_topic == "org_activity_v1"
    assert catalog.checkpoint_topic == "backfill_handoff_checkpoints_v1"
    assert catalog.reconciliation_topic == "reconciliation_required_v1"
    assert catalog.topic(catalog.checkpoint_topic).cleanup_policy == "compact"
    assert catalog.redrive_topic == "rekey_redriven_v1"
    assert catalog.migrations_topic == "rekey_migrations_v1" and catalog.retired_topics() == []
    assert catalog.topic(catalog.org_activity_topic).key.strategy == "org"
    assert {s.format for s in catalog.sources} == {"ccaas-json", "debezium"}
    assert all(catalog.families[f] for s in catalog.sources for f in s.feeds)
    events = catalog.family("interaction_events")
    assert events.output_topics == ["interaction_events_low_v2", "interaction_events_high_v2",
                                    "interaction_events_initech_v1"]
    assert catalog.topic("interaction_events_high_v2").partitions == 64
    assert catalog.topic("interaction_events_low_v2").partitions == 8
    assert catalog.family("org_timeline").salting is not None
    assert catalog.topic("interaction_events_low_v2").schema_compatibility in ("BACKWARD", "FULL")


def test_defaults_fill_topics_and_lz4_is_the_compression() -> None:
    catalog = parse_catalog(TEXT, SOURCE)
    low = catalog.topic("interaction_events_low_v2")
    assert (low.replication_factor, low.min_insync_replicas, low.retention_ms) == (1, 1, 604_800_000)
    assert low.kafka_configs() == {"cleanup.policy": "delete", "retention.ms": "604800000",
                                   "compression.type": "lz4", "min.insync.replicas": "1"}
    assert catalog.topic(catalog.dlq_topic).kafka_configs()["max.message.bytes"] == "2097152"


def test_replication_override_at_apply_time() -> None:
    low = parse_catalog(TEXT, SOURCE).topic("interaction_events_low_v2")
    provisioned = low.provisioned(replication_factor=3, min_insync_replicas=2)
    assert (provisioned.replication_factor, provisioned.min_insync_replicas) == (3, 2)
    assert provisioned.kafka_configs()["min.insync.replicas"] == "2"
    assert low.provisioned() == low
    with pytest.raises(ValueError, match=r"'interaction_events_low_v2': min\.insync\.replicas 2 exceeds replication"):
        low.provisioned(min_insync_replicas=2)


def test_lookups_name_what_is_missing() -> None:
    catalog = parse_catalog(TEXT, SOURCE)
    with pytest.raises(KeyError, match="topic 'nope_v1' is not in catalog version"):
        catalog.topic("nope_v1")
    with pytest.raises(KeyError, match="topic family 'nope' is not in catalog"):
        catalog.family("nope")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: _topic(d, "interaction_events_low_v2").update(partitions=0),
     "catalog/topics.yaml: topic 'interaction_events_low_v2': partitions: must be >= 1, got 0"),
    (lambda d: _topic(d, "interaction_events_low_v2").update(compression_type="brotli"),
     "topic 'interaction_events_low_v2': compression_type: must be 'lz4', 'zstd'"),
    (lambda d: _topic(d, "org_activity_v1").update(retention_days=3),
     "topic 'org_activity_v1': retention_days: unknown field"),
    (lambda d: _topic(d, "org_activity_v1").pop("replay"), "topic 'org_activity_v1': replay: required"),
    (lambda d: _topic(d, "org_activity_v1")["key"].update(strategy="random"),
     "topic 'org_activity_v1': key.strategy: must be 'org'"),
    (lambda d: _topic(d, "org_activity_v1").update(schema_compatibility="NONE"),
     "topic 'org_activity_v1': schema_compatibility: must be 'BACKWARD' or 'FULL', got 'NONE'"),
    (lambda d: d["sources"][0].update(format="csv"), "source 'genesys.conversations.raw': format: must be"),
    (lambda d: d["sources"][0].update(columns={"org_id": "tenant"}),
     "source 'genesys.conversations.raw': columns are declared for format debezium only"),
    (lambda d: d["sources"][1].update(mapping={"event_id": {"path": "tenant"}}),
     "source 'crm.public.interactions': mapping: format debezium takes org_id and interaction_id only (got "
     "event_id"),
    (lambda d: d["sources"][0].update(format="genesys-notifications", mapping={"org_id": {"column": "tenant"}}),
     "column is for format debezium"),
    (lambda d: d["sources"][1].update(columns={"org_id": ""}),
     "source 'crm.public.interactions': columns.org_id: must not be empty"),
    (lambda d: d["sources"][0].pop("format"), "source 'genesys.conversations.raw': declare a format"),
    (lambda d: d["families"]["org_timeline"]["salting"].update(buckets=1),
     "family 'org_timeline': salting.buckets: must be >= 2, got 1"),
    (lambda d: d["defaults"].update(replication_factor=0), "catalog/topics.yaml: defaults.replication_factor: must be"),
    (lambda d: d.update(version=0), "catalog/topics.yaml: version: must be >= 1, got 0"),
])
def test_field_errors_name_file_topic_and_field(edit: Callable[[dict[str, Any]], None], message: str) -> None:
    assert message in _errors(edit)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: _topic(d, "org_activity_v1").update(name="org_activity"),
     "topic 'org_activity': name: must end with a version suffix _v1, _v2"),
    (lambda d: _topic(d, "org_activity_v1").update(name="org activity_v1"),
     "topic 'org activity_v1': name: must be 1-249 characters"),
    (lambda d: d["topics"].append(dict(_topic(d, "org_activity_v1"))),
     "topic 'org_activity_v1': name: defined 2 times"),
    (lambda d: _topic(d, "org_activity_v1").update(min_insync_replicas=2),
     "topic 'org_activity_v1': min_insync_replicas: 2 exceeds replication_factor 1"),
    (lambda d: _topic(d, "org_activity_v1").update(configs={"retention.ms": "1"}),
     "topic 'org_activity_v1': configs.retention.ms: set it with the `retention_ms` field instead"),
    (lambda d: _topic(d, "backfill_handoff_checkpoints_v1").update(cleanup_policy="delete"),
     "topic 'backfill_handoff_checkpoints_v1': cleanup_policy: the checkpoint topic must be 'compact'"),
    (lambda d: _topic(d, "rekey_redriven_v1").update(cleanup_policy="delete"),
     "topic 'rekey_redriven_v1': cleanup_policy: the redrive topic must be 'compact'"),
    (lambda d: d["topics"].append({**_topic(d, "rekey_redriven_v1"), "name": "rekey_redriven_v2"}),
     "topics: needs at most one topic with role 'redrive', found 2"),
    (lambda d: _topic(d, "rekey_migrations_v1").update(cleanup_policy="delete"),
     "topic 'rekey_migrations_v1': cleanup_policy: the migrations topic must be 'compact'"),
    (lambda d: d["topics"].append({**_topic(d, "interaction_events_low_v2"), "name": "interaction_events_low_v1"}),
     "topic 'interaction_events_low_v1': role: 'family' but no family routes to it (an older version: `rekey "
     "migrate retire --topic` it)"),
    (lambda d: _topic(d, "interaction_events_low_v2").update(retired=True),
     "topic 'interaction_events_low_v2': retired: but family 'interaction_events' routes to it"),
    (lambda d: _topic(d, "org_activity_v1")["key"].update(strategy="org_interaction"),
     "topic 'org_activity_v1': key.strategy: the org_activity projection must be keyed by 'org'"),
    (lambda d: _topic(d, "reconciliation_required_v1").update(role="dead_letter"),
     "topics: needs exactly one topic with role 'reconciliation', found 0"),
    (lambda d: d["sources"][0].update(feeds=["interaction_events", "nope"]),
     "source 'genesys.conversations.raw': feeds: unknown family 'nope'"),
    (lambda d: d["families"]["interaction_events"]["tiers"].update(low="missing_v1"),
     "family 'interaction_events': tiers.low: unknown topic 'missing_v1'"),
    (lambda d: d["families"]["interaction_events"]["tiers"].update(low="org_activity_v1"),
     "tiers.low: topic 'org_activity_v1' has role 'org_activity', expected 'family'"),
    (lambda d: d["families"]["interaction_events"].update(key_strategy="interaction"),
     "tiers.low: topic 'interaction_events_low_v2' is keyed 'org_interaction' but the family's key_strategy"),
    (lambda d: d["families"]["org_timeline"].pop("salting"),
     "family 'org_timeline': salting: required exactly when key_strategy is 'salted'"),
    (lambda d: d["families"]["interaction_events"].update(high_volume_orgs=["org-initech"]),
     "family 'interaction_events': dedicated: orgs ['org-initech'] are also high_volume_orgs"),
    (lambda d: d["families"]["interaction_events"].update(high_volume_orgs=["org:acme"]),
     "high_volume_orgs: org id 'org:acme' must be non-empty and free of ':'"),
    (lambda d: d["families"]["interaction_events"]["tiers"].pop("high"),
     "family 'interaction_events': tiers.high: required when high_volume_orgs are listed"),
    (lambda d: d["families"]["org_timeline"]["tiers"].update(low="interaction_events_low_v2"),
     "topic 'interaction_events_low_v2': belongs to several families: interaction_events, org_timeline"),
    (lambda d: d.update(default_family="nope"), "catalog/topics.yaml: default_family: unknown family 'nope'"),
])
def test_cross_reference_errors(edit: Callable[[dict[str, Any]], None], message: str) -> None:
    assert message in _errors(edit)


def test_every_problem_is_reported_at_once() -> None:
    def two_problems(data: dict[str, Any]) -> None:
        _topic(data, "org_activity_v1").update(min_insync_replicas=2)
        data["default_family"] = "nope"

    assert len(_errors(two_problems).splitlines()) == 2


def test_not_yaml_and_not_a_mapping() -> None:
    with pytest.raises(CatalogError, match=r"catalog/topics\.yaml: not valid YAML"):
        parse_catalog("version: [1", SOURCE)
    with pytest.raises(CatalogError, match=r"catalog/topics\.yaml: must be a YAML mapping"):
        parse_catalog("- 1\n", SOURCE)


def test_a_retired_older_version_is_valid_and_not_provisioned() -> None:
    data = yaml.safe_load(TEXT)
    data["topics"].append({**_topic(data, "interaction_events_low_v2"), "name": "interaction_events_low_v1",
                           "retired": True})
    catalog = parse_catalog(yaml.safe_dump(data, sort_keys=False), SOURCE)

    assert [t.name for t in catalog.retired_topics()] == ["interaction_events_low_v1"]
    assert "interaction_events_low_v1" not in {t.name for t in catalog.provisioned_topics()}

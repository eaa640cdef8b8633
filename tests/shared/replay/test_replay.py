"""One org's replay scope under the repo's catalog, its records picked by key, and their order."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.catalog import parse_catalog
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.shared.replay import in_sequence_order, is_org_key, org_scope, sequence_of
from kafka_rekey_dev.embedded.maven import REPO_ROOT

CATALOG = parse_catalog((REPO_ROOT / "catalog" / "topics.yaml").read_text(), "catalog/topics.yaml")


def test_an_org_keyed_family_puts_a_plain_org_on_the_one_partition_its_id_hashes_to() -> None:
    scope = org_scope(CATALOG, "org_timeline", "org-00007")
    assert (scope.topic, scope.partitions, scope.topic_partitions) == (
        "org_timeline_v1", (partition_for("org-00007", 32),), 32)


def test_a_salted_hot_org_is_on_its_buckets_partitions() -> None:
    scope = org_scope(CATALOG, "org_timeline", "org-acme")
    assert scope.partitions == tuple(sorted({partition_for(f"org-acme:{b}", 32) for b in range(16)}))
    assert 1 < len(scope.partitions) < 32
    assert "salted into 16 buckets" in scope.why


def test_an_org_interaction_family_reads_every_partition_of_the_org_tier_or_dedicated_topic() -> None:
    high = org_scope(CATALOG, "interaction_events", "org-acme")
    assert (high.topic, high.partitions, high.family_partitions) == ("interaction_events_high_v2", tuple(range(64)),
                                                                     64 + 8 + 12)
    assert "every partition of interaction_events_high_v2 must be read" in high.why
    dedicated = org_scope(CATALOG, "interaction_events", "org-initech")
    assert (dedicated.topic, dedicated.partitions) == ("interaction_events_initech_v1", tuple(range(12)))
    assert org_scope(CATALOG, "interaction_events", "org-small").topic == "interaction_events_low_v2"


def test_an_unknown_family_is_named() -> None:
    with pytest.raises(KeyError, match="nope"):
        org_scope(CATALOG, "nope", "org-1")


def test_org_keys_of_every_strategy_and_not_an_org_sharing_the_prefix() -> None:
    org = b"org-1"
    assert all(is_org_key(key, org) for key in (b"org-1", b"org-1:int-9", b"org-1:15"))
    assert not any(is_org_key(key, org) for key in (b"org-12", b"org-12:int-9", b"org", None))


def test_records_come_out_key_by_key_in_sequence_order() -> None:
    rows = [(b"a", 2, "a2"), (b"b", 1, "b1"), (b"a", 1, "a1"), (b"b", 3, "b3"), (b"b", 2, "b2")]
    assert in_sequence_order(rows) == ["a1", "a2", "b1", "b2", "b3"]
    assert sequence_of([("src", b"s/0/1"), ("seq", b"12")], "t/0/5") == 12
    with pytest.raises(ValueError, match=r"^t/0/5: no numeric seq header"):
        sequence_of([("src", b"s/0/1")], "t/0/5")

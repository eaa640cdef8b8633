"""`route` on the repo's catalog: tiers, dedicated topics, salting, partitions and the deciding version."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.catalog import Catalog, parse_catalog
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.shared.routing import route
from kafka_rekey_dev.embedded.maven import REPO_ROOT

CATALOG = parse_catalog((REPO_ROOT / "catalog" / "topics.yaml").read_text(), "catalog/topics.yaml")


@pytest.fixture
def catalog() -> Catalog:
    return CATALOG


def test_high_volume_org_goes_to_the_high_tier(catalog: Catalog) -> None:
    decided = route(catalog, "interaction_events", "org-acme", "int-42")
    assert (decided.topic, decided.tier, decided.key) == ("interaction_events_high_v2", "high", "org-acme:int-42")
    assert decided.partition == partition_for("org-acme:int-42", 64)
    assert (decided.bucket, decided.strategy, decided.catalog_version) == (None, "org_interaction", catalog.version)


def test_other_orgs_go_to_the_low_tier(catalog: Catalog) -> None:
    decided = route(catalog, "interaction_events", "org-small", "int-42")
    assert (decided.topic, decided.tier) == ("interaction_events_low_v2", "low")
    assert decided.partition == partition_for("org-small:int-42", 8)


def test_dedicated_org_gets_its_own_topic(catalog: Catalog) -> None:
    decided = route(catalog, "interaction_events", "org-initech", "int-42")
    assert (decided.topic, decided.tier) == ("interaction_events_initech_v1", "dedicated")
    assert decided.partition == partition_for("org-initech:int-42", 12)


def test_hot_org_of_a_salted_family_is_salted(catalog: Catalog) -> None:
    decided = route(catalog, "org_timeline", "org-acme", "int-42")
    bucket = partition_for("int-42", 16)
    assert (decided.key, decided.bucket, decided.strategy) == (f"org-acme:{bucket}", bucket, "salted")
    assert decided.partition == partition_for(decided.key, 32)


def test_other_orgs_of_a_salted_family_use_the_base_strategy(catalog: Catalog) -> None:
    decided = route(catalog, "org_timeline", "org-small", "int-42")
    assert (decided.key, decided.bucket, decided.strategy, decided.tier) == ("org-small", None, "org", "low")


def test_every_event_of_an_interaction_gets_the_same_route(catalog: Catalog) -> None:
    routes = {route(catalog, "org_timeline", "org-globex", "int-7") for _ in range(3)}
    assert len(routes) == 1


def test_unknown_family_names_the_known_ones(catalog: Catalog) -> None:
    with pytest.raises(KeyError, match="topic family 'nope' is not in catalog version 1; known: interaction_events"):
        route(catalog, "nope", "org-1", "int-1")


def test_invalid_org_id_is_refused(catalog: Catalog) -> None:
    with pytest.raises(ValueError, match="must not contain ':'"):
        route(catalog, "interaction_events", "org:1", "int-1")


@given(st.sampled_from(["org-acme", "org-globex", "org-initech", "org-a", "org-b"]),
       st.text(min_size=1, max_size=30), st.sampled_from(["interaction_events", "org_timeline"]))
def test_partition_is_in_range_of_the_routed_topic(org_id: str, interaction_id: str, family: str) -> None:
    decided = route(CATALOG, family, org_id, interaction_id)
    partitions = CATALOG.topic(decided.topic).partitions
    assert 0 <= decided.partition < partitions
    assert decided.partition == partition_for(decided.key, partitions)

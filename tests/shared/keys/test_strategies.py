"""Key strategies: the keys they build, salting buckets, id validation and synthetic keys."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.keys import (
    BASE_STRATEGIES,
    KEY_STRATEGIES,
    ORDERING_GUARANTEES,
    base_key,
    salt_bucket,
    salted_key,
    synthetic_keys,
)
from kafka_rekey.shared.partitioning import partition_for


def test_base_keys() -> None:
    assert base_key("org_interaction", "org-1", "int-9") == "org-1:int-9"
    assert base_key("org", "org-1", "int-9") == "org-1"
    assert base_key("interaction", "org-1", "int-9") == "int-9"


def test_salted_key_uses_the_interaction_bucket() -> None:
    key, bucket = salted_key("org-1", "int-9", 16)
    assert bucket == partition_for("int-9", 16) == salt_bucket("int-9", 16)
    assert key == f"org-1:{bucket}"


@given(st.text(min_size=1, max_size=40), st.integers(2, 256))
def test_every_event_of_an_interaction_stays_in_one_bucket(interaction_id: str, buckets: int) -> None:
    first = salted_key("org-hot", interaction_id, buckets)
    assert salted_key("org-hot", interaction_id, buckets) == first
    assert 0 <= first[1] < buckets


def test_a_hot_org_spreads_over_many_buckets() -> None:
    buckets = {salted_key("org-hot", f"int-{i}", 16)[1] for i in range(500)}
    assert buckets == set(range(16))


@pytest.mark.parametrize(("org_id", "interaction_id", "message"), [
    ("", "int-1", "org_id must not be empty"),
    ("org:1", "int-1", "org_id 'org:1' must not contain ':'"),
    ("org-1", "", "interaction_id must not be empty \\(org_id 'org-1'\\)"),
])
def test_invalid_ids_are_refused(org_id: str, interaction_id: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        base_key("org_interaction", org_id, interaction_id)
    with pytest.raises(ValueError, match=message):
        salted_key(org_id, interaction_id, 4)


def test_interaction_ids_may_contain_the_separator() -> None:
    assert base_key("org_interaction", "org-1", "ext:42") == "org-1:ext:42"


def test_every_strategy_documents_its_ordering() -> None:
    assert set(ORDERING_GUARANTEES) == set(KEY_STRATEGIES) == {*BASE_STRATEGIES, "salted"}


def test_synthetic_keys_look_like_the_strategy() -> None:
    assert synthetic_keys("org", 2) == ["org-0", "org-1"]
    assert synthetic_keys("org_interaction", 2, orgs=1) == ["org-0:interaction-0", "org-0:interaction-1"]
    assert synthetic_keys("interaction", 1) == ["interaction-0"]
    assert synthetic_keys("salted", 17)[16] == "org-1:0"
    assert len(set(synthetic_keys("custom", 1000))) == 1000

"""The key strategies a topic family can choose, the key each builds, and the ordering each keeps.

- `org`: key = `org_id`; one total order per org, but a big org is one hot partition.
- `org_interaction` (the default): key = `org_id:interaction_id`; order per interaction, an org spreads out.
- `interaction`: key = `interaction_id`; order per interaction, but an org's replay must scan every partition.
- `salted`: hot orgs get key `org_id:bucket` with `bucket = partition_for(interaction_id, buckets)`, so every
  event of an interaction stays in one bucket (and in order); other orgs use the family's base strategy.

Keys are canonical UTF-8 strings; `partition_for` hashes exactly these.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from kafka_rekey.shared.partitioning import partition_for

KeyStrategy = Literal["org", "org_interaction", "interaction", "salted"]
BaseKeyStrategy = Literal["org", "org_interaction", "interaction"]
KEY_STRATEGIES: Final[tuple[KeyStrategy, ...]] = get_args(KeyStrategy)
BASE_STRATEGIES: Final[tuple[BaseKeyStrategy, ...]] = get_args(BaseKeyStrategy)

KEY_SEPARATOR: Final = ":"

ORDERING_GUARANTEES: Final[dict[KeyStrategy, str]] = {
    "org": "total order per org (every event of an org in one partition)",
    "org_interaction": "order per interaction; none across an org's interactions",
    "interaction": "order per interaction id; an org's replay scans every partition",
    "salted": "order per interaction (inside its bucket); per org only within a bucket; "
              "non-hot orgs keep the base strategy's order",
}


def _check_ids(org_id: str, interaction_id: str) -> None:
    if not org_id:
        raise ValueError("org_id must not be empty")
    if KEY_SEPARATOR in org_id:
        raise ValueError(f"org_id {org_id!r} must not contain {KEY_SEPARATOR!r}: it separates the parts of a key")
    if not interaction_id:
        raise ValueError(f"interaction_id must not be empty (org_id {org_id!r})")


def base_key(strategy: BaseKeyStrategy, org_id: str, interaction_id: str) -> str:
    """The key of an (org, interaction) event under an unsalted strategy."""
    _check_ids(org_id, interaction_id)
    if strategy == "org_interaction":
        return f"{org_id}{KEY_SEPARATOR}{interaction_id}"
    if strategy == "org":
        return org_id
    if strategy == "interaction":
        return interaction_id
    raise ValueError(f"unknown base key strategy {strategy!r}; expected one of {', '.join(BASE_STRATEGIES)}")


def salt_bucket(interaction_id: str, buckets: int) -> int:
    """The salt bucket of an interaction: `partition_for(interaction_id, buckets)`, stable for its lifetime."""
    return partition_for(interaction_id, buckets)


def salted_key(org_id: str, interaction_id: str, buckets: int) -> tuple[str, int]:
    """A hot org's salted key `org_id:bucket` and the bucket."""
    _check_ids(org_id, interaction_id)
    bucket = salt_bucket(interaction_id, buckets)
    return f"{org_id}{KEY_SEPARATOR}{bucket}", bucket

"""`route`: where an (org, interaction) event goes — topic, key, partition — under a given catalog.

The live faust service and the Spark backfill both call exactly this function per record, so both place every
record identically. It only does dictionary/set lookups on the catalog's precomputed `FamilyTable` and one
murmur2 hash (cached for repeating keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shared.catalog import Catalog, TopicTarget
from shared.keys import KeyStrategy, base_key, salted_key
from shared.partitioning import partition_for

Tier = Literal["high", "low", "dedicated"]


@dataclass(frozen=True, slots=True)
class Route:
    """Where one record goes, and what decided it.

    `strategy` is the strategy applied to this record: `salted` for a hot org of a salted family, else the
    family's (base) strategy. `bucket` is the salt bucket, None when not salted.
    """

    topic: str
    key: str
    partition: int
    tier: Tier
    bucket: int | None
    strategy: KeyStrategy
    catalog_version: int


def route(catalog: Catalog, family: str, org_id: str, interaction_id: str) -> Route:
    """Route one event of `family` (raises KeyError for an unknown family, ValueError for an invalid id)."""
    table = catalog.family_table(family)
    target: TopicTarget | None = table.dedicated.get(org_id)
    tier: Tier
    if target is not None:
        tier = "dedicated"
    elif table.high is not None and org_id in table.high_volume_orgs:
        target, tier = table.high, "high"
    else:
        target, tier = table.low, "low"
    bucket: int | None
    strategy: KeyStrategy
    if org_id in table.hot_orgs:
        key, bucket = salted_key(org_id, interaction_id, table.salt_buckets)
        strategy = "salted"
    else:
        key, bucket, strategy = base_key(table.base_strategy, org_id, interaction_id), None, table.base_strategy
    return Route(target.topic, key, partition_for(key, target.partitions), tier, bucket, strategy, catalog.version)

"""`route`: where an (org, interaction) event goes — topic, key, partition — under a given catalog.

The live ACL, the Spark backfill and the benchmark all call exactly this function per record (through
`shared.pipeline`), so all place every record identically. It only does dictionary/set lookups on the
catalog's precomputed `FamilyTable`; the partition is computed (murmur2, cached for repeating keys) only when
asked: the live runtime leaves placement to librdkafka's `murmur2_random` partitioner, which picks the same one.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kafka_rekey.shared.catalog import Catalog, FamilyTable, TopicTarget
from kafka_rekey.shared.keys import KeyStrategy, base_key, salted_key
from kafka_rekey.shared.partitioning import partition_for

Tier = Literal["high", "low", "dedicated"]


class Route(msgspec.Struct, frozen=True, gc=False):
    """Where one record goes, and what decided it.

    `strategy` is the strategy applied to this record: `salted` for a hot org of a salted family, else the
    family's (base) strategy. `bucket` is the salt bucket, None when not salted.
    """

    topic: str
    key: str
    partitions: int
    """The topic's partition count (the catalog's)."""
    tier: Tier
    bucket: int | None
    strategy: KeyStrategy
    catalog_version: int

    @property
    def partition(self) -> int:
        """The partition Java's default partitioner picks for `key` (as librdkafka's `murmur2_random` does)."""
        return partition_for(self.key, self.partitions)


def route(catalog: Catalog, family: str, org_id: str, interaction_id: str) -> Route:
    """Route one event of `family` (raises KeyError for an unknown family, ValueError for an invalid id)."""
    return route_in(catalog.family_table(family), catalog.version, org_id, interaction_id)


def route_in(table: FamilyTable, catalog_version: int, org_id: str, interaction_id: str) -> Route:
    """`route` with the family's table already looked up (a per-record caller keeps the tables it uses)."""
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
    return Route(target.topic, key, target.partitions, tier, bucket, strategy, catalog_version)

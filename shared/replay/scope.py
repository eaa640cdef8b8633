"""Where one org's records of a family can be: its dedicated topic, or its tier's topic, and on it the partitions
its keys hash to (Java-parity murmur2). An org-keyed family puts the org on one partition, a salted hot org on
its buckets' partitions; an `org_interaction`-keyed family spreads the org over every partition of its tier."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.keys import KEY_SEPARATOR
from kafka_rekey.shared.partitioning import partition_for


@dataclass(frozen=True, slots=True)
class ReplayScope:
    family: str
    org_id: str
    topic: str
    partitions: tuple[int, ...]
    """The partitions of `topic` that can hold the org, ascending."""
    topic_partitions: int
    family_partitions: int
    """Every partition of every topic of the family: what a scan of the family reads."""
    why: str


def org_scope(catalog: Catalog, family: str, org_id: str) -> ReplayScope:
    """The partitions to read for `org_id` in `family` (KeyError naming the family if it is not in the catalog)."""
    table = catalog.family_table(family)
    family_partitions = sum(catalog.topic(t).partitions for t in catalog.family(family).output_topics)
    target = table.dedicated.get(org_id)
    if target is not None:
        where = f"{target.topic} is org {org_id}'s dedicated topic"
    elif table.high is not None and org_id in table.high_volume_orgs:
        target, where = table.high, f"{org_id} is a high-volume org of {family}"
    else:
        target, where = table.low, f"{org_id} is in {family}'s low tier"
    if org_id in table.hot_orgs:
        # Every bucket a key can take: the bucket comes from the interaction id, so any of them.
        keys = {f"{org_id}{KEY_SEPARATOR}{bucket}" for bucket in range(table.salt_buckets)}
        partitions = tuple(sorted({partition_for(key, target.partitions) for key in keys}))
        why = f"{where}; salted into {table.salt_buckets} buckets ({org_id}:0..{table.salt_buckets - 1})"
    elif table.base_strategy == "org":
        partitions = (partition_for(org_id, target.partitions),)
        why = f"{where}; keyed by org id"
    else:
        partitions = tuple(range(target.partitions))
        why = f"{where}; keyed {table.base_strategy}, so every partition of {target.topic} must be read"
    return ReplayScope(family, org_id, target.topic, partitions, target.partitions, family_partitions, why)

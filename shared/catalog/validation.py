"""Cross-reference checks of a parsed catalog: names, roles, families' topics and orgs, sources' families."""

from __future__ import annotations

import re
from collections import Counter
from typing import Final, get_args

from kafka_rekey.shared.catalog.errors import Problem
from kafka_rekey.shared.catalog.models import MANAGED_CONFIGS, Catalog, Family, OwnedTopic, TopicRole, TopicSpec
from kafka_rekey.shared.keys import KEY_SEPARATOR

KAFKA_TOPIC_NAME: Final = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
VERSIONED_NAME: Final = re.compile(r"_v[1-9][0-9]*$")
OPTIONAL_ROLES: Final[tuple[TopicRole, ...]] = ("redrive", "migrations")
SINGLE_ROLES: Final[tuple[TopicRole, ...]] = tuple(
    r for r in get_args(TopicRole) if r != "family" and r not in OPTIONAL_ROLES)


def check_catalog(catalog: Catalog) -> list[Problem]:
    """Every cross-reference problem of `catalog` (empty when it is consistent)."""
    problems = _check_names(catalog)
    for topic in (*catalog.sources, *catalog.topics):
        problems += _check_topic(topic)
    problems += _check_roles(catalog)
    problems += _check_families(catalog)
    for source in catalog.sources:
        problems += [
            Problem(f"source {source.name!r}", "feeds", f"unknown family {family!r}")
            for family in source.feeds if family not in catalog.families
        ]
    if catalog.default_family not in catalog.families:
        problems.append(Problem("", "default_family", f"unknown family {catalog.default_family!r}"))
    return problems


def _kind(topic: TopicSpec) -> str:
    return "topic" if isinstance(topic, OwnedTopic) else "source"


def _check_names(catalog: Catalog) -> list[Problem]:
    problems: list[Problem] = []
    counts = Counter(t.name for t in (*catalog.sources, *catalog.topics))
    problems += [Problem(f"topic {n!r}", "name", f"defined {c} times") for n, c in counts.items() if c > 1]
    for topic in (*catalog.sources, *catalog.topics):
        if not KAFKA_TOPIC_NAME.match(topic.name):
            problems.append(Problem(f"{_kind(topic)} {topic.name!r}", "name",
                                    "must be 1-249 characters of A-Z a-z 0-9 . _ -"))
        if isinstance(topic, OwnedTopic) and not VERSIONED_NAME.search(topic.name):
            problems.append(Problem(f"topic {topic.name!r}", "name",
                                    "must end with a version suffix _v1, _v2, ... (a re-keyed topic is a new "
                                    "version, never an in-place change)"))
    problems += [Problem(f"family {key!r}", "name", f"{family.name!r} differs from the family's key")
                 for key, family in catalog.families.items() if family.name != key]
    return problems


def _check_topic(topic: TopicSpec) -> list[Problem]:
    where = f"{_kind(topic)} {topic.name!r}"
    problems: list[Problem] = []
    if topic.min_insync_replicas > topic.replication_factor:
        problems.append(Problem(where, "min_insync_replicas",
                                f"{topic.min_insync_replicas} exceeds replication_factor {topic.replication_factor}"))
    for config, field in MANAGED_CONFIGS.items():
        if config in topic.configs:
            problems.append(Problem(where, f"configs.{config}", f"set it with the `{field}` field instead"))
    return problems


def _check_roles(catalog: Catalog) -> list[Problem]:
    problems: list[Problem] = []
    for role in SINGLE_ROLES:
        count = len(catalog.owned_topics(role))
        if count != 1:
            problems.append(Problem("", "topics", f"needs exactly one topic with role {role!r}, found {count}"))
    for role in OPTIONAL_ROLES:
        count = len(catalog.owned_topics(role))
        if count > 1:
            problems.append(Problem("", "topics", f"needs at most one topic with role {role!r}, found {count}"))
    for role, why in (("checkpoint", "latest checkpoint per key"), ("redrive", "one record per redriven dead letter"),
                      ("migrations", "the latest record per migration")):
        for topic in catalog.owned_topics(role):
            if topic.cleanup_policy != "compact":
                problems.append(Problem(f"topic {topic.name!r}", "cleanup_policy",
                                        f"the {role} topic must be 'compact' ({why})"))
    for topic in catalog.owned_topics("org_activity"):
        if topic.key.strategy != "org":
            problems.append(Problem(f"topic {topic.name!r}", "key.strategy",
                                    "the org_activity projection must be keyed by 'org'"))
    return problems


def _check_families(catalog: Catalog) -> list[Problem]:
    problems: list[Problem] = []
    owners: dict[str, list[str]] = {}
    topics = {t.name: t for t in catalog.topics}
    for family in catalog.families.values():
        problems += _check_family(family, topics)
        for name in family.output_topics:
            owners.setdefault(name, []).append(family.name)
    for name, families in owners.items():
        if len(families) > 1:
            problems.append(Problem(f"topic {name!r}", "", f"belongs to several families: {', '.join(families)}"))
    for topic in catalog.owned_topics("family"):
        if topic.name not in owners and not topic.retired:
            problems.append(Problem(f"topic {topic.name!r}", "role", "'family' but no family routes to it (an "
                                    "older version: `rekey migrate retire --topic` it)"))
    for topic in catalog.retired_topics():
        if topic.name in owners:
            problems.append(Problem(f"topic {topic.name!r}", "retired",
                                    f"but family {owners[topic.name][0]!r} routes to it"))
    return problems


def _check_family(family: Family, topics: dict[str, OwnedTopic]) -> list[Problem]:
    where = f"family {family.name!r}"
    problems: list[Problem] = []
    references = [("tiers.low", family.tiers.low), ("tiers.high", family.tiers.high),
                  *((f"dedicated.{org}", topic) for org, topic in family.dedicated.items())]
    for field, name in references:
        if name is None:
            continue
        topic = topics.get(name)
        if topic is None:
            problems.append(Problem(where, field, f"unknown topic {name!r}"))
        elif topic.role != "family":
            problems.append(Problem(where, field, f"topic {name!r} has role {topic.role!r}, expected 'family'"))
        elif topic.key.strategy != family.key_strategy:
            problems.append(Problem(where, field, f"topic {name!r} is keyed {topic.key.strategy!r} but the "
                                                  f"family's key_strategy is {family.key_strategy!r}"))
    if (family.key_strategy == "salted") != (family.salting is not None):
        problems.append(Problem(where, "salting", "required exactly when key_strategy is 'salted'"))
    if family.high_volume_orgs and family.tiers.high is None:
        problems.append(Problem(where, "tiers.high", "required when high_volume_orgs are listed"))
    if family.tiers.high is not None and not family.high_volume_orgs:
        problems.append(Problem(where, "high_volume_orgs", "required when tiers.high is set"))
    both = sorted(set(family.high_volume_orgs) & set(family.dedicated))
    if both:
        problems.append(Problem(where, "dedicated", f"orgs {both} are also high_volume_orgs; pick one"))
    orgs = [("high_volume_orgs", o) for o in family.high_volume_orgs] + [("dedicated", o) for o in family.dedicated]
    if family.salting is not None:
        orgs += [("salting.hot_orgs", o) for o in family.salting.hot_orgs]
    problems += [Problem(where, field, f"org id {org!r} must be non-empty and free of {KEY_SEPARATOR!r}")
                 for field, org in orgs if not org or KEY_SEPARATOR in org]
    return problems

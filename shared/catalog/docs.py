"""Render the catalog as Markdown: a summary table, the families, then every topic's documentation."""

from __future__ import annotations

from kafka_rekey.shared.catalog.models import IDEMPOTENCY_MEANINGS, Catalog, Family, OwnedTopic, SourceTopic, TopicSpec
from kafka_rekey.shared.keys import ORDERING_GUARANTEES
from kafka_rekey.shared.translation.debezium import DebeziumSource
from kafka_rekey.shared.translation.mapping import MAPPED_FIELDS, Condition, FieldSource, SourceMapping
from kafka_rekey.shared.translation.timestamps import TimeEncoding

_DAY_MS = 86_400_000
_HOUR_MS = 3_600_000


def retention_text(retention_ms: int) -> str:
    if retention_ms < 0:
        return "forever"
    if retention_ms % _DAY_MS == 0:
        days = retention_ms // _DAY_MS
        return f"{days} day{'s' if days != 1 else ''}"
    if retention_ms % _HOUR_MS == 0:
        return f"{retention_ms // _HOUR_MS} h"
    return f"{retention_ms} ms"


def _cell(text: str) -> str:
    """One Markdown table cell / paragraph: a single line, `|` escaped, `<` not read as an HTML tag."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


def _role(topic: TopicSpec) -> str:
    if isinstance(topic, SourceTopic):
        return f"source ({topic.format or 'mapping'})"
    return topic.role if isinstance(topic, OwnedTopic) else "topic"


def _summary(catalog: Catalog) -> list[str]:
    lines = ["| Topic | Role | Partitions | RF | min ISR | Retention | Cleanup | Key |",
             "|---|---|---:|---:|---:|---|---|---|"]
    for topic in (*catalog.sources, *catalog.topics):
        lines.append(
            f"| [`{topic.name}`](#{topic.name.replace('.', '')}) | {_role(topic)} | {topic.partitions} | "
            f"{topic.replication_factor} | {topic.min_insync_replicas} | {retention_text(topic.retention_ms)} | "
            f"{topic.cleanup_policy} | {topic.key.strategy} |"
        )
    return lines


def _family(family: Family) -> list[str]:
    lines = [f"### Family `{family.name}`", "", _cell(family.description), "",
             f"- Key strategy: `{family.key_strategy}` - {ORDERING_GUARANTEES[family.key_strategy]}"]
    if family.tiers.high:
        orgs = ", ".join(f"`{org}`" for org in family.high_volume_orgs)
        lines.append(f"- High tier: `{family.tiers.high}` for {orgs}")
    lines.append(f"- {'Low tier' if family.tiers.high else 'Topic'}: `{family.tiers.low}`"
                 f"{' for every other org' if family.tiers.high or family.dedicated else ''}")
    lines += [f"- Dedicated: `{org}` -> `{topic}`" for org, topic in family.dedicated.items()]
    if family.salting:
        hot = ", ".join(f"`{org}`" for org in family.salting.hot_orgs)
        lines.append(f"- Salting: {hot} keyed `org_id:bucket` over {family.salting.buckets} buckets "
                     f"(bucket = partition_for(interaction_id, {family.salting.buckets})); other orgs keyed by "
                     f"`{family.salting.base_strategy}`")
    return [*lines, ""]


def _topic(topic: TopicSpec) -> list[str]:
    rows = [
        ("Role", _role(topic)),
        ("Partitions / RF / min ISR", f"{topic.partitions} / {topic.replication_factor} / "
                                      f"{topic.min_insync_replicas}"),
        ("Key", f"`{topic.key.strategy}`: {topic.key.definition}"),
        ("Expected key cardinality", f"{topic.key.expected_cardinality:,}"),
        ("Ordering guarantee", topic.ordering_scope),
        ("Idempotency", f"`{topic.idempotency}`: {IDEMPOTENCY_MEANINGS[topic.idempotency]}"),
        ("Replay", topic.replay),
        ("Schema", f"`{topic.schema_subject}`, {topic.schema_compatibility} compatibility "
                   "(new fields need defaults)"),
        ("Retention / cleanup", f"{retention_text(topic.retention_ms)}, `{topic.cleanup_policy}`: "
                                f"{topic.retention_reason}"),
        ("Kafka configs", ", ".join(f"`{k}={v}`" for k, v in topic.kafka_configs().items())),
    ]
    if isinstance(topic, SourceTopic):
        rows.insert(1, ("Feeds", ", ".join(f"`{f}`" for f in topic.feeds)))
        rows.insert(2, ("Created by rekey", "yes" if topic.managed else "no (owned upstream)"))
        rows[3:3] = _translation_rows(topic)
    lines = [f"### {topic.name}", "", _cell(topic.description), "", "| | |", "|---|---|"]
    return [*lines, *(f"| {name} | {_cell(value)} |" for name, value in rows), ""]


def _translation_rows(topic: SourceTopic) -> list[tuple[str, str]]:
    translation = topic.translation
    if isinstance(translation, DebeziumSource):
        rows = [("Format", "`debezium` (translated in code)")]
        if topic.columns is not None:
            rows.append(("Columns", ", ".join(f"{name} `{column}`"
                                              for name, column in translation.columns.model_dump().items() if column)))
        id_sources = (("org_id", translation.org_id), ("interaction_id", translation.interaction_id))
        rows.extend((f"`{name}` from", ", else ".join(_field_source(source) for source in sources))
                    for name, sources in id_sources if sources)
        return rows
    if not isinstance(translation, SourceMapping):
        return [("Format", f"`{translation}` (translated in code)")]
    declared = f"`{topic.format}` preset" if topic.format else "declared mapping"
    if topic.format and topic.mapping:
        declared += f", with {', '.join(sorted(topic.mapping.model_dump(exclude_none=True)))} declared"
    rows = [("Format", declared)]
    for name in MAPPED_FIELDS:
        sources = getattr(translation, name)
        if sources:
            rows.append((f"`{name}` from", ", else ".join(_field_source(source) for source in sources)))
    rows.append(("Payload", f"`{translation.payload}`" if translation.payload else "the whole value"))
    for label, conditions in (("Only", translation.only), ("Skipped", translation.skip)):
        if conditions:
            rows.append((label, "; ".join(_condition(condition) for condition in conditions)))
    return rows


def _field_source(source: FieldSource) -> str:
    where = (f"`{source.path}`" if source.path is not None else "the record key" if source.key
             else f"header `{source.header}`" if source.header is not None
             else "the record timestamp" if source.record_timestamp else "the topic name" if source.topic
             else f"column `{source.column}`" if source.column is not None else f"constant `{source.constant}`")
    if source.pattern is not None:
        where += f" (group of `{source.pattern}`)"
    if source.split is not None:
        where += f" (segment {source.segment} split by `{source.split}`)"
    if source.encoding is not TimeEncoding.AUTO:
        where += f" ({source.encoding})"
    if source.lowercase:
        where += " (lower case)"
    if source.ids == "template":
        where += " (ids as `{id}`)"
    return where


def _condition(condition: Condition) -> str:
    test = (f"is one of {', '.join(f'`{v}`' for v in condition.equals)}" if condition.equals
            else f"starts with {', '.join(f'`{v}`' for v in condition.prefixes)}")
    return f"`{condition.path}` {test} ({condition.reason})"


def render_markdown(catalog: Catalog, source: str) -> str:
    """The Markdown documentation of every topic of `catalog` (read from `source`)."""
    lines = [
        "# Topics",
        "",
        f"Generated by `rekey topics docs` from `{source}` (catalog version {catalog.version}); "
        "do not edit by hand.",
        "",
        f"Records are routed by `shared.routing.route`; the default family is `{catalog.default_family}`. "
        "Partition = `toPositive(murmur2(utf8(key))) % partitions`, as Java's default partitioner.",
        "",
        "## Summary",
        "",
        *_summary(catalog),
        "",
        "## Families",
        "",
    ]
    for family in catalog.families.values():
        lines += _family(family)
    lines += ["## Sources", ""]
    for source_topic in catalog.sources:
        lines += _topic(source_topic)
    lines += ["## Topics", ""]
    for topic in catalog.topics:
        lines += _topic(topic)
    return "\n".join(lines).rstrip() + "\n"

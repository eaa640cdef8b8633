"""The topic catalog's data model: every topic rekey reads or writes, and how each topic family is keyed and tiered.

The models check each field on its own (types, ranges, allowed values); cross-references between topics,
families and sources are checked by `shared.catalog.validation` once the whole catalog is parsed.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from kafka_rekey.shared.catalog.tables import FamilyTable, TopicTarget
from kafka_rekey.shared.keys import BaseKeyStrategy, KeyStrategy
from kafka_rekey.shared.translation.debezium import DebeziumColumns, DebeziumSource
from kafka_rekey.shared.translation.mapping import MappingOverrides, SourceMapping
from kafka_rekey.shared.translation.presets import PRESETS
from kafka_rekey.shared.translation.source import SourceFormat

TopicRole = Literal["family", "dead_letter", "org_activity", "checkpoint", "reconciliation", "redrive",
                    "migrations"]
CompressionType = Literal["lz4", "zstd", "snappy", "gzip", "producer", "uncompressed"]
CleanupPolicy = Literal["delete", "compact", "compact,delete"]
Compatibility = Literal["BACKWARD", "FULL"]
TopicKeyStrategy = Literal["org", "org_interaction", "interaction", "salted", "custom", "none"]
Idempotency = Literal["key_sequence", "event_id", "source_position", "latest_per_key", "none"]

IDEMPOTENCY_MEANINGS: Final[dict[Idempotency, str]] = {
    "key_sequence": "dedupe by key + sequence: a record whose sequence is not above the last applied one for "
                    "its key is a duplicate",
    "event_id": "dedupe by event id",
    "source_position": "dedupe by source topic/partition/offset",
    "latest_per_key": "last write per key wins (compaction); re-applying a record is harmless",
    "none": "no idempotency: consumers must tolerate duplicates",
}

# Topic configs the catalog sets through first-class fields; `configs` may not set them a second time.
MANAGED_CONFIGS: Final[dict[str, str]] = {
    "cleanup.policy": "cleanup_policy",
    "retention.ms": "retention_ms",
    "compression.type": "compression_type",
    "min.insync.replicas": "min_insync_replicas",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TopicKey(_Strict):
    """What a topic's records are keyed by."""

    strategy: TopicKeyStrategy
    definition: str = Field(min_length=1)
    expected_cardinality: int = Field(ge=1, description="Distinct keys expected over the retention period.")


class TopicDefaults(_Strict):
    """Settings applied to every topic and managed source that does not set them itself."""

    replication_factor: int | None = Field(default=None, ge=1)
    min_insync_replicas: int | None = Field(default=None, ge=1)
    compression_type: CompressionType | None = None
    cleanup_policy: CleanupPolicy | None = None
    retention_ms: int | None = Field(default=None, ge=-1)


class TopicSpec(_Strict):
    """One topic: its Kafka settings and the documentation every topic carries."""

    name: str
    description: str = Field(min_length=1)
    partitions: int = Field(ge=1)
    replication_factor: int = Field(ge=1)
    min_insync_replicas: int = Field(ge=1)
    retention_ms: int = Field(ge=-1, description="-1 keeps records forever.")
    retention_reason: str = Field(min_length=1)
    compression_type: CompressionType = "lz4"
    cleanup_policy: CleanupPolicy
    configs: dict[str, str] = Field(default_factory=dict, description="Further topic configs, verbatim.")
    key: TopicKey
    ordering_scope: str = Field(min_length=1)
    idempotency: Idempotency
    replay: str = Field(min_length=1)
    schema_subject: str = Field(min_length=1, description="Schema-registry subject of the record values.")
    schema_compatibility: Compatibility

    @property
    def keyed(self) -> bool:
        return self.key.strategy != "none"

    def kafka_configs(self) -> dict[str, str]:
        """The topic-level Kafka configs the catalog prescribes for this topic."""
        return {
            "cleanup.policy": self.cleanup_policy,
            "retention.ms": str(self.retention_ms),
            "compression.type": self.compression_type,
            "min.insync.replicas": str(self.min_insync_replicas),
            **self.configs,
        }

    def provisioned(self, replication_factor: int | None = None,
                    min_insync_replicas: int | None = None) -> TopicSpec:
        """This topic with the replication settings of the cluster it is applied to (None keeps the catalog's)."""
        replication = replication_factor or self.replication_factor
        min_isr = min_insync_replicas or self.min_insync_replicas
        if min_isr > replication:
            raise ValueError(
                f"topic {self.name!r}: min.insync.replicas {min_isr} exceeds replication factor {replication}"
            )
        return self.model_copy(update={"replication_factor": replication, "min_insync_replicas": min_isr})


class OwnedTopic(TopicSpec):
    """A topic rekey writes: versioned name (`..._v2`) and a role."""

    role: TopicRole
    retired: bool = Field(default=False, description="An older version nothing reads or writes any more (`rekey "
                                                     "migrate retire`): not created, reported while it exists.")


class SourceTopic(TopicSpec):
    """A raw source topic rekey reads and re-keys: its records are in a source `format` (a translator in code or a
    mapping preset), or declared by a `mapping` (over the preset's fields, if a preset is named too)."""

    format: SourceFormat | None = None
    mapping: MappingOverrides | None = None
    columns: DebeziumColumns | None = Field(default=None, description="format debezium: the captured table's "
                                                                      "columns, where they are not the defaults.")
    feeds: tuple[str, ...] = Field(min_length=1, description="Families this source's events are routed to.")
    managed: bool = Field(
        default=False, description="True: `rekey topics apply` creates it (demo); false: an upstream team owns it."
    )
    _translation: SourceFormat | SourceMapping | DebeziumSource = PrivateAttr()

    @model_validator(mode="after")
    def _translation_declared(self) -> SourceTopic:
        if self.format is SourceFormat.DEBEZIUM:
            self._translation = self._debezium()
            return self
        if self.columns is not None:
            raise ValueError("columns are declared for format debezium only (others take a mapping)")
        if self.mapping is None:
            if self.format is None:
                raise ValueError("declare a format (a preset) or a mapping")
            if self.format in PRESETS:
                try:
                    PRESETS[self.format].over()
                except ValueError as incomplete:
                    raise ValueError(f"format {self.format}: {incomplete}: declare it in mapping "
                                     f"(e.g. org_id: {{constant: <your org id>}})") from None
            self._translation = self.format
            return self
        if self.format is not None and self.format not in PRESETS:
            presets = ", ".join(sorted(PRESETS))
            raise ValueError(f"mapping: format {self.format} is translated in code and takes no mapping "
                             f"(presets that do: {presets})")
        preset = None if self.format is None else PRESETS[self.format]
        self._translation = self.mapping.over(preset)
        return self

    def _debezium(self) -> DebeziumSource:
        """A debezium source's columns, and where its ids are when its mapping says (org_id, interaction_id)."""
        mapping = self.mapping or MappingOverrides()
        others = sorted(name for name, value in mapping.model_dump(exclude_none=True).items()
                        if name not in ("org_id", "interaction_id"))
        if others:
            raise ValueError(f"mapping: format debezium takes org_id and interaction_id only (got {', '.join(others)}"
                             f"; the event time and interaction type are columns)")
        return DebeziumSource(columns=self.columns or DebeziumColumns(), org_id=mapping.org_id or (),
                              interaction_id=mapping.interaction_id or ())

    @property
    def translation(self) -> SourceFormat | SourceMapping | DebeziumSource:
        """What `shared.translation.translate` takes for this source's records (the same object every time)."""
        return self._translation


class Tiers(_Strict):
    """The family's volume tiers: high-volume orgs go to `high`, every other org to `low`."""

    low: str
    high: str | None = None


class Salting(_Strict):
    """Salting of a `salted` family: hot orgs are spread over `buckets` keys, the rest use `base_strategy`."""

    base_strategy: BaseKeyStrategy
    buckets: int = Field(ge=2)
    hot_orgs: tuple[str, ...] = Field(min_length=1)


class Family(_Strict):
    """A family of output topics sharing one key strategy: its tiers, dedicated topics and salting."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    key_strategy: KeyStrategy = "org_interaction"
    tiers: Tiers
    high_volume_orgs: tuple[str, ...] = ()
    dedicated: dict[str, str] = Field(default_factory=dict, description="org id -> its own topic")
    salting: Salting | None = None

    @property
    def output_topics(self) -> list[str]:
        """Every topic the family writes: low tier, high tier, dedicated topics."""
        names = [self.tiers.low, *([self.tiers.high] if self.tiers.high else []), *self.dedicated.values()]
        return list(dict.fromkeys(names))


class Catalog(_Strict):
    """The whole catalog. Build it with `shared.catalog.parse_catalog` (or `services.catalog_files.load_catalog`),
    which also checks every cross-reference; constructing it directly skips those checks."""

    version: int = Field(ge=1)
    default_family: str
    defaults: TopicDefaults = Field(default_factory=TopicDefaults)
    sources: tuple[SourceTopic, ...] = ()
    families: dict[str, Family] = Field(min_length=1, description="family name -> family")
    topics: tuple[OwnedTopic, ...] = Field(min_length=1)

    _topics_by_name: dict[str, TopicSpec] = PrivateAttr(default_factory=dict)
    _tables: dict[str, FamilyTable] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _name_families(cls, data: Any) -> Any:
        """Families are a mapping in YAML; each family also carries its name (the mapping key)."""
        if isinstance(data, dict) and isinstance(data.get("families"), dict):
            families = {
                name: {"name": name, **family} if isinstance(family, dict) else family
                for name, family in data["families"].items()
            }
            return {**data, "families": families}
        return data

    def model_post_init(self, context: object, /) -> None:
        self._topics_by_name.update({t.name: t for t in (*self.sources, *self.topics)})

    def topic(self, name: str) -> TopicSpec:
        """Any topic of the catalog (owned or source) by name."""
        try:
            return self._topics_by_name[name]
        except KeyError:
            raise KeyError(
                f"topic {name!r} is not in catalog version {self.version}; known: {', '.join(self._topics_by_name)}"
            ) from None

    def family(self, name: str) -> Family:
        try:
            return self.families[name]
        except KeyError:
            raise KeyError(
                f"topic family {name!r} is not in catalog version {self.version}; known: {', '.join(self.families)}"
            ) from None

    def family_table(self, name: str) -> FamilyTable:
        """The family's routing lookups (sets and resolved partition counts), built once per catalog."""
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = self._build_table(self.family(name))
        return table

    def _build_table(self, family: Family) -> FamilyTable:
        def target(topic: str) -> TopicTarget:
            return TopicTarget(topic, self.topic(topic).partitions)

        salting = family.salting
        return FamilyTable(
            family=family.name,
            strategy=family.key_strategy,
            base_strategy=salting.base_strategy if salting else _base(family.key_strategy),
            salt_buckets=salting.buckets if salting else 0,
            hot_orgs=frozenset(salting.hot_orgs if salting else ()),
            high_volume_orgs=frozenset(family.high_volume_orgs),
            dedicated={org: target(topic) for org, topic in family.dedicated.items()},
            high=target(family.tiers.high) if family.tiers.high else None,
            low=target(family.tiers.low),
        )

    def owned_topics(self, role: TopicRole) -> list[OwnedTopic]:
        return [t for t in self.topics if t.role == role]

    def _single(self, role: TopicRole) -> str:
        (topic,) = self.owned_topics(role)  # parse_catalog guarantees exactly one
        return topic.name

    @property
    def dlq_topic(self) -> str:
        """Name of the dead-letter topic (`catalog.topic(name)` has its spec)."""
        return self._single("dead_letter")

    @property
    def org_activity_topic(self) -> str:
        """Name of the org_activity projection topic, keyed by org_id."""
        return self._single("org_activity")

    @property
    def checkpoint_topic(self) -> str:
        """Name of the compacted backfill -> live hand-off checkpoint topic."""
        return self._single("checkpoint")

    @property
    def redrive_topic(self) -> str | None:
        """Name of the compacted topic remembering which dead letters were redriven (None: not declared)."""
        declared = self.owned_topics("redrive")
        return declared[0].name if declared else None

    @property
    def migrations_topic(self) -> str | None:
        """Name of the compacted topic of consumer-group migrations (None: not declared)."""
        declared = self.owned_topics("migrations")
        return declared[0].name if declared else None

    @property
    def reconciliation_topic(self) -> str:
        """Name of the reconciliation_required topic."""
        return self._single("reconciliation")

    def provisioned_topics(self) -> list[TopicSpec]:
        """Every topic `rekey topics apply` creates: the owned topics not retired and the managed sources."""
        return [*(s for s in self.sources if s.managed), *(t for t in self.topics if not t.retired)]

    def retired_topics(self) -> list[OwnedTopic]:
        return [t for t in self.topics if t.retired]


def _base(strategy: KeyStrategy) -> BaseKeyStrategy:
    if strategy == "salted":
        raise ValueError("a salted family needs a `salting` block naming its base strategy")
    return strategy

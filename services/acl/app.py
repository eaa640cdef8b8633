"""The ACL on the batch runtime: a translate stage and a sequence stage joined by an internal topic keyed by the
output key.

translate: source topics -> `shared.pipeline` (translate, route, encode) -> sequencing topic, DLQ or a counted skip.
sequence:  sequencing topic -> dense per-key sequence from changelogged state -> versioned domain topics.

The internal hop is what makes the sequence safe: events of one key arrive spread over many source partitions,
and only after re-partitioning by output key does one worker own each key's counter. Both stages run in one
process by default; `--stage` runs one, so each scales on its own (one consumer group either way).
"""

from __future__ import annotations

from enum import StrEnum

from kafka_rekey.services.acl.sequence import SequenceStage
from kafka_rekey.services.acl.translate import TranslateStage, remembering_sources
from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.handoff import HandoffSequences
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.memory import SchemaIdMemory
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.runtime.metrics import TopOrgs
from kafka_rekey.services.runtime.processor import Processor
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.services.runtime.topics import InternalTopic
from kafka_rekey.services.runtime.worker import Worker
from kafka_rekey.shared.avro import load_schema, wire_header
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.pipeline import RecordPipeline
from kafka_rekey.shared.translation import AvroValues

SERVICE = "acl"


class Stage(StrEnum):
    TRANSLATE = "translate"
    SEQUENCE = "sequence"


def wire_headers(catalog: Catalog, registry: SchemaRegistryClient) -> dict[str, bytes]:
    """Register the domain schema for every output topic now (fail at start-up, not on the first record); with the
    registry unreachable, the ids its memory holds for the same schemas (`services.registry.memory`)."""
    schema = load_schema("interaction_event")
    headers = {topic: wire_header(AvroSerde(registry, catalog.topic(topic).schema_subject, schema).schema_id)
               for family in catalog.families.values() for topic in family.output_topics}
    registry.log_recalled()
    return headers


def create_worker(settings: RuntimeSettings, stages: frozenset[Stage] = frozenset(Stage)) -> Worker:
    catalog = load_catalog(settings.catalog_path)
    group_id = settings.app_id or "rekey-acl"
    sequencing = f"{group_id}-sequencing"
    # The CDC rows' ids only where they are read: a process that translates a source that remembers rows.
    handoff = HandoffSequences.load(catalog, settings, group_id=group_id,
                                    row_ids=Stage.TRANSLATE in stages and bool(remembering_sources(catalog)))
    processors: list[Processor] = []
    if Stage.TRANSLATE in stages:
        registry = SchemaRegistryClient(settings.registry, memory=SchemaIdMemory(settings.data_dir / group_id))
        pipeline = RecordPipeline(catalog, SERVICE, settings.service_version, wire_headers(catalog, registry),
                                  avro=AvroValues(registry.writer_schema_text))
        processors.append(TranslateStage(catalog, pipeline, sequencing, group_id, TopOrgs(settings.top_orgs),
                                         SERVICE, handoff.row_ids))
    if Stage.SEQUENCE in stages:
        processors.append(SequenceStage(sequencing, group_id, handoff, settings.dedupe_horizon_hours, SERVICE,
                                        settings.sequence_idle_days))
    internal = InternalTopic(sequencing, settings.internal_partitions, settings.internal_replication_factor,
                             {"compression.type": "producer"})
    role = "" if stages == frozenset(Stage) else "+".join(sorted(stages))
    return Worker(settings, group_id, SERVICE, processors, [internal], unmetered=frozenset({catalog.dlq_topic}),
                  role=role)

"""The projection faust app: domain interaction events -> the org-activity topic, keyed by org_id."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import faust

from services.catalog_files import load_catalog
from services.registry.client import SchemaRegistryClient
from services.registry.serde import AvroSerde
from services.streaming.app import build_app
from services.streaming.metrics import CONSUMED, OUTPUT_PARTITION, PRODUCED, export_consumer_lag
from services.streaming.settings import StreamSettings
from shared.avro import load_schema
from shared.partitioning import partition_for
from shared.projection import org_activity

SERVICE = "projection"
RAW: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw"}


def _millis(value: Any) -> int:
    return int(value.timestamp() * 1000) if isinstance(value, datetime) else int(value)


def create_app(settings: StreamSettings) -> faust.App:
    catalog = load_catalog(settings.catalog_path)
    app = build_app(settings.app_id or "rekey-projection", settings)
    registry = SchemaRegistryClient(settings.registry)
    # The interaction events family (the catalog's default): one activity record per domain event.
    domain_topics = catalog.family(catalog.default_family).output_topics
    decoders = {t: AvroSerde(registry, catalog.topic(t).schema_subject, load_schema("interaction_event"))
                for t in domain_topics}
    target_name = catalog.org_activity_topic
    target_spec = catalog.topic(target_name)
    encoder = AvroSerde(registry, target_spec.schema_subject, load_schema("org_activity"))
    target = app.topic(target_name, **RAW)

    @app.agent(app.topic(*domain_topics, **RAW))
    async def project_org_activity(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            message = event.message
            CONSUMED.labels(SERVICE, message.topic).inc()
            domain = decoders[message.topic].decode(message.value)
            activity = org_activity(domain, message.topic, message.partition, message.offset)
            activity["event_time"] = _millis(activity["event_time"])
            partition = partition_for(activity["org_id"], target_spec.partitions)
            await target.send(key=activity["org_id"].encode(), value=encoder.encode(activity), partition=partition)
            PRODUCED.labels(SERVICE, target_name).inc()
            OUTPUT_PARTITION.labels(target_name, str(partition)).inc()

    @app.timer(interval=5.0)
    async def export_gauges() -> None:
        export_consumer_lag(app, SERVICE)

    return app

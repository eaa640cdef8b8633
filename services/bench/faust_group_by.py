"""Baseline (b) of `rekey bench acl`: the same re-key as a plain faust `group_by` pipeline.

Stage 1 decodes the JSON source record (faust's json serializer) and repartitions it with `group_by` on
`org_id:interaction_id` through an internal topic; stage 2 (the grouped stream) writes one record per family the
source feeds, keyed by the family's output key (`shared.routing.route`), to one scratch output topic with faust's
own `Topic.send`. No sequencing, no tables, no dedupe, no Avro. It is built with the same `build_app` settings as the
ACL (producer linger/batch/acks, commit interval), so only the pipeline differs.

Run as a worker: `python -m services.bench.faust_group_by` (settings from `REKEY_*`, plus `REKEY_BENCH_SOURCE`,
`REKEY_BENCH_OUTPUT`, `REKEY_BENCH_FEEDS_FROM`).
"""

from __future__ import annotations

import os
from typing import Any

import faust

from services.catalog_files import load_catalog
from services.streaming.app import build_app, ensure_internal_topic
from services.streaming.metrics import CONSUMED, PRODUCED
from services.streaming.settings import StreamSettings
from shared.routing import route

SERVICE = "faust_group_by"


def interaction_key(event: dict[str, Any]) -> str:
    return f"{event['orgId']}:{event['interactionId']}"


def create_app(settings: StreamSettings, source: str, output: str, feeds_from: str) -> faust.App:
    catalog = load_catalog(settings.catalog_path)
    feeds = next(s for s in catalog.sources if s.name == feeds_from).feeds
    app = build_app(settings.app_id or "rekey-bench-faust-group-by", settings)
    source_topic = app.topic(source, key_type=bytes, key_serializer="raw", value_serializer="json")
    repartition_name = f"{app.conf.id}-by-interaction-repartition"
    ensure_internal_topic(settings, repartition_name)
    repartition = app.topic(repartition_name, partitions=settings.internal_partitions, internal=True,
                            key_serializer="raw", value_serializer="json")
    output_topic = app.topic(output, key_serializer="raw", value_serializer="json")

    def counted(event: dict[str, Any]) -> dict[str, Any]:
        CONSUMED.labels(SERVICE, source).inc()
        return event

    @app.agent(source_topic)
    async def regroup(stream: faust.StreamT[dict[str, Any]]) -> None:
        stream.add_processor(counted)
        async for event in stream.group_by(lambda e: interaction_key(e).encode(), name="by-interaction",
                                           topic=repartition):
            for family in feeds:
                target = route(catalog, family, event["orgId"], event["interactionId"])
                await output_topic.send(key=target.key.encode(), value=event)
                PRODUCED.labels(SERVICE, output).inc()

    return app


def main() -> None:
    from faust.worker import Worker

    settings = StreamSettings()
    app = create_app(settings, os.environ["REKEY_BENCH_SOURCE"], os.environ["REKEY_BENCH_OUTPUT"],
                     os.environ.get("REKEY_BENCH_FEEDS_FROM", "genesys.conversations.raw"))
    Worker(app, loglevel=settings.log_level.lower(), quiet=True).execute_from_commandline()


if __name__ == "__main__":
    main()

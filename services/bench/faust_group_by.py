"""Baseline (b) of `rekey bench acl`: the same re-key as a plain faust `group_by` pipeline.

Stage 1 decodes the JSON source record (faust's json serializer) and repartitions it with `group_by` on
`org_id:interaction_id` through an internal topic; stage 2 (the grouped stream) writes one record per family the
source feeds, keyed by the family's output key (`shared.routing.route`), to one scratch output topic with faust's
own `Topic.send`. No sequencing, no tables, no dedupe, no Avro. Plain faust-streaming with its default transport
(aiokafka), acks=all, lz4, a 1 s commit interval: a benchmark baseline only, which needs the `bench` extra
(`pip install -e '.[bench]'`); the live services do not use faust.

Run as a worker: `python -m services.bench.faust_group_by` (settings from `REKEY_*`, plus `REKEY_BENCH_SOURCE`,
`REKEY_BENCH_OUTPUT`, `REKEY_BENCH_FEEDS_FROM`).
"""

from __future__ import annotations

import os
from typing import Any

import faust
from confluent_kafka.admin import AdminClient
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services.catalog_files import load_catalog
from services.runtime.metrics import CONSUMED, PRODUCED
from services.runtime.settings import RuntimeSettings
from services.runtime.topics import InternalTopic, ensure_topics
from shared.routing import route

SERVICE = "faust_group_by"


def interaction_key(event: dict[str, Any]) -> str:
    return f"{event['orgId']}:{event['interactionId']}"


def build_app(app_id: str, settings: RuntimeSettings) -> faust.App:
    app = faust.App(
        app_id,
        broker=[f"kafka://{address}" for address in settings.kafka.bootstrap_servers.split(",")],
        store="memory://",
        processing_guarantee="at_least_once",
        topic_partitions=settings.internal_partitions,
        consumer_auto_offset_reset="earliest",
        broker_commit_interval=1.0,
        producer_acks=-1,
        producer_linger=0.05,
        producer_compression_type="lz4",
        producer_max_batch_size=262144,
        web_port=settings.web_port,
        web_bind="127.0.0.1",
        autodiscover=False,
    )

    @app.page("/readyz")
    class Ready(View):
        async def get(self, request: Request) -> Response:
            ready = bool(app.consumer.assignment()) and not app.rebalancing
            return self.json({"ready": ready}, status=200 if ready else 503)

    @app.page("/metrics")
    class Metrics(View):
        async def get(self, request: Request) -> Response:
            return self.bytes(generate_latest(), content_type=CONTENT_TYPE_LATEST.split(";")[0] + "; version=0.0.4")

    return app


def create_app(settings: RuntimeSettings, source: str, output: str, feeds_from: str) -> faust.App:
    catalog = load_catalog(settings.catalog_path)
    feeds = next(s for s in catalog.sources if s.name == feeds_from).feeds
    app = build_app(settings.app_id or "rekey-bench-faust-group-by", settings)
    source_topic = app.topic(source, key_type=bytes, key_serializer="raw", value_serializer="json")
    repartition_name = f"{app.conf.id}-by-interaction-repartition"
    # Created before the worker joins: faust ignores an internal topic missing at the first assignment.
    ensure_topics(AdminClient(settings.kafka.librdkafka()),
                  [InternalTopic(repartition_name, settings.internal_partitions, 1)])
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

    settings = RuntimeSettings()
    app = create_app(settings, os.environ["REKEY_BENCH_SOURCE"], os.environ["REKEY_BENCH_OUTPUT"],
                     os.environ.get("REKEY_BENCH_FEEDS_FROM", "genesys.conversations.raw"))
    Worker(app, loglevel=settings.log_level.lower(), quiet=True).execute_from_commandline()


if __name__ == "__main__":
    main()

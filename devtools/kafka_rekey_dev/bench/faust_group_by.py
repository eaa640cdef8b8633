"""Baseline (b) of `rekey bench acl`: the same re-key as a plain faust `group_by` pipeline.

Stage 1 decodes the JSON source record (faust's json serializer) and repartitions it with `group_by` on
`org_id:interaction_id` through an internal topic; stage 2 (the grouped stream) writes one record per family the
source feeds, keyed by the family's output key (`shared.routing.route`), to one scratch output topic with faust's
own `Topic.send`. No sequencing, no tables, no dedupe, no Avro. Plain faust-streaming with its default transport
(aiokafka) and none of the patches the former faust services carried; the app options are theirs (acks=all,
linger 50 ms, lz4, a 1 s commit interval; store and processing guarantee from `REKEY_*`). A benchmark baseline
only, which needs the `bench` extra (`pip install -e './devtools[bench]'`); the live services do not use faust.

Run as a worker: `python -m kafka_rekey_dev.bench.faust_group_by` (settings from `REKEY_*`, plus `REKEY_BENCH_SOURCE`,
`REKEY_BENCH_OUTPUT`, `REKEY_BENCH_FEEDS_FROM`).
"""

from __future__ import annotations

import os
import ssl
from typing import Any

import faust
from confluent_kafka.admin import AdminClient
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.runtime.metrics import CONSUMED, PRODUCED
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.services.runtime.topics import InternalTopic, ensure_topics
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.routing import route

SERVICE = "faust_group_by"


def interaction_key(event: dict[str, Any]) -> str:
    return f"{event['orgId']}:{event['interactionId']}"


def _credentials(kafka: KafkaSettings) -> faust.types.auth.CredentialsT | None:
    context = None
    if kafka.security_protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=str(kafka.ssl_ca_location) if kafka.ssl_ca_location else None)
    if kafka.security_protocol.startswith("SASL"):
        password = kafka.sasl_password.get_secret_value() if kafka.sasl_password else ""
        return faust.SASLCredentials(username=kafka.sasl_username, password=password, ssl_context=context,
                                     mechanism=kafka.sasl_mechanism or "PLAIN")
    if context is not None:
        return faust.SSLCredentials(context)
    return None


def build_app(app_id: str, settings: RuntimeSettings) -> faust.App:
    """A plain faust App with the options the live faust services had (no monkey-patches) and probe pages."""
    datadir = settings.data_dir / app_id
    datadir.mkdir(parents=True, exist_ok=True)
    app = faust.App(
        app_id,
        broker=[f"kafka://{address}" for address in settings.kafka.bootstrap_servers.split(",")],
        broker_credentials=_credentials(settings.kafka),
        store=f"{settings.state_store}://",
        datadir=str(datadir),
        processing_guarantee=settings.processing_guarantee,
        topic_partitions=settings.internal_partitions,
        topic_replication_factor=settings.internal_replication_factor,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=10.0,
        broker_heartbeat_interval=1.0,
        broker_commit_interval=1.0,
        producer_acks=-1,
        producer_linger=0.05,
        producer_compression_type="lz4",
        producer_max_batch_size=262144,
        stream_wait_empty=False,
        stream_recovery_delay=0.0,
        web_port=settings.web_port,
        web_bind="127.0.0.1",
        web_in_thread=False,
        autodiscover=False,
    )

    @app.page("/healthz")
    class Health(View):
        async def get(self, request: Request) -> Response:
            return self.json({"status": "ok", "app": app.conf.id})

    @app.page("/readyz")
    class Ready(View):
        async def get(self, request: Request) -> Response:
            # Ready once the group is joined (an assignment) and not rebalancing or recovering tables.
            ready = bool(app.consumer.assignment()) and not app.rebalancing and not app.tables.recovery.in_recovery
            return self.json({"ready": ready}, status=200 if ready else 503)

    @app.page("/metrics")
    class Metrics(View):
        async def get(self, request: Request) -> Response:
            # aiohttp takes the charset separately from the content type.
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
                  [InternalTopic(repartition_name, settings.internal_partitions, settings.internal_replication_factor,
                                 {"compression.type": "lz4"})])
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

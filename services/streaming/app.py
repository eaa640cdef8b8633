"""Build a configured faust App (aiokafka transport) from typed settings, with health and metrics pages."""

from __future__ import annotations

import ssl
import time
from pathlib import Path

import faust
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services.settings import KafkaSettings
from services.streaming.durability import drain_buffer_on_flush
from services.streaming.gaps import exclude_delivered_record_from_gaps
from services.streaming.local_state import open_state_directory
from services.streaming.positions import refetch_skipped_records
from services.streaming.recovery import ask_the_broker_for_highwaters, seek_before_fetching_after_recovery
from services.streaming.settings import StreamSettings
from services.streaming.transactions import use_exactly_once_transactions


def _credentials(kafka: KafkaSettings) -> faust.types.auth.CredentialsT | None:
    context = None
    if kafka.security_protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=str(kafka.ssl_ca_location) if kafka.ssl_ca_location else None)
    if kafka.security_protocol.startswith("SASL"):
        password = kafka.sasl_password.get_secret_value() if kafka.sasl_password else ""
        mechanism = kafka.sasl_mechanism or "PLAIN"
        return faust.SASLCredentials(
            username=kafka.sasl_username, password=password, ssl_context=context, mechanism=mechanism
        )
    if context is not None:
        return faust.SSLCredentials(context)
    return None


def state_directory(settings: StreamSettings, app_id: str) -> Path:
    return settings.data_dir / app_id


def build_app(app_id: str, settings: StreamSettings) -> faust.App:
    exactly_once = settings.processing_guarantee == "exactly_once"
    open_state_directory(state_directory(settings, app_id), exactly_once)
    brokers = [f"kafka://{address}" for address in settings.kafka.bootstrap_servers.split(",")]
    app = faust.App(
        app_id,
        broker=brokers,
        broker_credentials=_credentials(settings.kafka),
        store=f"{settings.state_store}://",
        datadir=str(state_directory(settings, app_id)),
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
        web_bind="0.0.0.0",
        web_in_thread=False,
        autodiscover=False,
    )
    drain_buffer_on_flush()
    seek_before_fetching_after_recovery()
    if exactly_once:
        exclude_delivered_record_from_gaps()
        ask_the_broker_for_highwaters()
        use_exactly_once_transactions(app)
    refetch_skipped_records()
    _add_probe_pages(app)
    return app


def is_ready(app: faust.App) -> bool:
    """Ready once the group is joined and table recovery has finished (not during a rebalance)."""
    recovery = app.tables.recovery
    return bool(app.consumer.assignment()) and not app.rebalancing and not recovery.in_recovery


def _add_probe_pages(app: faust.App) -> None:
    @app.page("/healthz")
    class Health(View):
        async def get(self, request: Request) -> Response:
            return self.json({"status": "ok", "app": app.conf.id})

    @app.page("/readyz")
    class Ready(View):
        async def get(self, request: Request) -> Response:
            ready = is_ready(app)
            return self.json({"ready": ready}, status=200 if ready else 503)

    @app.page("/metrics")
    class Metrics(View):
        async def get(self, request: Request) -> Response:
            # aiohttp takes the charset separately from the content type.
            return self.bytes(generate_latest(), content_type=CONTENT_TYPE_LATEST.split(";")[0] + "; version=0.0.4")


def ensure_internal_topic(settings: StreamSettings, name: str) -> None:
    """Create an internal topic before the worker joins its group.

    Faust declares internal topics concurrently with subscribing; a topic missing at the first assignment is
    then ignored until the next metadata refresh (minutes), so the agent reading it would sit idle.
    """
    admin = AdminClient(settings.kafka.librdkafka())
    future = admin.create_topics([NewTopic(name, settings.internal_partitions, settings.internal_replication_factor,
                                           config={"compression.type": "lz4"})])[name]
    try:
        future.result(30)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    wait_visible = time.monotonic() + 30
    while name not in admin.list_topics(name, timeout=10).topics or \
            admin.list_topics(name, timeout=10).topics[name].error is not None:
        if time.monotonic() > wait_visible:
            raise TimeoutError(f"internal topic {name} not visible in metadata after 30s")
        time.sleep(0.2)

"""The ACL faust app: two agents joined by an internal topic keyed by the output key.

translate: source topics -> `translate` + `route` (shared) -> sequencing topic (or the DLQ, or a counted skip).
sequence:  sequencing topic -> dense per-key sequence from a changelog-backed table -> versioned domain topic.

The internal hop is what makes the sequence safe: events of one key arrive spread over many source partitions,
and only after re-partitioning by output key does one worker own each key's counter.
"""

from __future__ import annotations

from typing import Any

import faust

from services.acl.envelope import Envelope
from services.acl.handoff import HandoffSequences
from services.acl.outputs import OutputWriter
from services.catalog_files import load_catalog
from services.streaming.app import build_app, ensure_internal_topic
from services.streaming.metrics import CONSUMED, SKIPPED, TopOrgs, export_consumer_lag
from services.streaming.settings import StreamSettings
from services.streaming.transactions import commit_barrier
from shared.partitioning import partition_for
from shared.routing import route
from shared.sequencing import Duplicate, Fresh, Redelivered, SeenEntry, decide
from shared.translation import PoisonPill, PoisonReason, Skip, SourceRecord, translate

SERVICE = "acl"


def create_app(settings: StreamSettings) -> faust.App:
    catalog = load_catalog(settings.catalog_path)
    app = build_app(settings.app_id or "rekey-acl", settings)
    sources = {source.name: source for source in catalog.sources}
    internal_partitions = settings.internal_partitions
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw"}

    source_topic = app.topic(*sources, **raw)
    sequencing_name = f"{app.conf.id}-sequencing"
    ensure_internal_topic(settings, sequencing_name)
    sequencing_topic = app.topic(sequencing_name, partitions=internal_partitions, internal=True, **raw)
    sequences = app.Table("sequences", default=None, partitions=internal_partitions, key_type=str)
    recent_per_key = settings.dedupe_recent_per_key
    seen = app.Table(
        "seen",
        default=None,
        partitions=internal_partitions,
        key_type=str,
        extra_topic_configs={"retention.ms": int(settings.dedupe_horizon_hours * 3_600_000),
                             "cleanup.policy": "compact,delete"},
    )
    writer = OutputWriter(app, catalog, settings, SERVICE)
    writer.prepare()
    handoff = HandoffSequences.load(catalog, settings, group_id=app.conf.id)
    top_orgs = TopOrgs(settings.top_orgs)
    barrier = commit_barrier(app)

    async def translate_event(message: faust.types.Message) -> None:
        CONSUMED.labels(SERVICE, message.topic).inc()
        source = sources[message.topic]
        record = SourceRecord(
            topic=message.topic,
            partition=message.partition,
            offset=message.offset,
            key=message.key,
            value=message.value,
            headers={k: bytes(v) for k, v in (message.headers or [])},
            timestamp_ms=int(message.timestamp * 1000),
        )
        outcome = translate(record, source.format)
        if isinstance(outcome, PoisonPill):
            await writer.dead_letter(record, outcome)
            return
        if isinstance(outcome, Skip):
            SKIPPED.labels(SERVICE, outcome.reason).inc()
            return
        try:
            targets = [route(catalog, family, outcome.org_id, outcome.interaction_id) for family in source.feeds]
        except ValueError as error:
            await writer.dead_letter(record, PoisonPill(PoisonReason.UNROUTABLE, str(error), None))
            return
        top_orgs.add(outcome.org_id)
        record_fields = writer.domain_record(outcome)
        position = f"{message.topic}/{message.partition}/{message.offset}"
        for target in targets:
            envelope = Envelope(
                record=record_fields,
                dedupe_id=outcome.dedupe_id,
                source=position,
                topic=target.topic,
                partition=target.partition,
                key=target.key,
            )
            await writer.sender.send(
                sequencing_name, target.key.encode(), envelope.to_bytes(),
                partition_for(target.key, internal_partitions),
            )

    async def stamp_sequence(envelope: Envelope) -> None:
        sequence_key = envelope.sequence_key
        seen_key = f"{sequence_key}|{envelope.dedupe_id}"
        state = sequences.get(sequence_key)
        if state is None:
            last, recent = handoff.last_sequence(sequence_key), []
        else:
            last, recent = state
        remembered = seen.get(seen_key) or next(
            ([seq, src] for dedupe_id, seq, src in recent if dedupe_id == envelope.dedupe_id), None
        )
        decision = decide(SeenEntry(*remembered) if remembered else None, last, envelope.source)
        if isinstance(decision, Duplicate):
            SKIPPED.labels(SERVICE, "duplicate").inc()
            return
        if isinstance(decision, Fresh):
            # The counter's own record also remembers the key's latest dedupe ids: the two tables' changelog
            # writes are not atomic under at-least-once, and a crash that keeps the counter but loses the
            # `seen` entry would otherwise number a redelivered event again and leave a gap.
            recent = [*recent, [envelope.dedupe_id, decision.sequence, envelope.source]][-recent_per_key:]
            sequences[sequence_key] = [decision.sequence, recent]
            seen[seen_key] = [decision.sequence, envelope.source]
        elif decision.sequence > last:
            # A redelivery whose `seen` write survived a crash but whose counter write did not: the counter
            # must not fall behind a sequence already given, or the next event would reuse it.
            sequences[sequence_key] = [decision.sequence, recent]
        assert isinstance(decision, Fresh | Redelivered)
        await writer.emit(envelope, decision.sequence)

    @app.agent(source_topic)
    async def translate_events(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            async with barrier.processing(barrier.epoch, event.message) as current:
                if current:
                    await translate_event(event.message)

    @app.agent(sequencing_topic)
    async def stamp_sequences(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            async with barrier.processing(barrier.epoch, event.message) as current:
                if current:
                    await stamp_sequence(Envelope.from_bytes(event.value))

    @app.timer(interval=5.0)
    async def export_gauges() -> None:
        top_orgs.export()
        export_consumer_lag(app, SERVICE)

    return app

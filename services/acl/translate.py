"""The ACL's translate stage: source records -> `shared.pipeline` -> envelopes on the sequencing topic (on the
partition Java's partitioner picks for the output key, a batch's envelopes of one partition in few records), dead
letters, or counted skips. CDC sources keep the ids of the rows they have seen (`services.acl.rows`), and those a
backfill handed off, for deletes that carry only the primary key."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence

from confluent_kafka import Message

from kafka_rekey.services.acl.envelope import Envelope, encode_envelopes
from kafka_rekey.services.acl.rows import RowTables
from kafka_rekey.services.runtime.metrics import DEAD_LETTERED, SKIPPED, TopOrgs
from kafka_rekey.services.runtime.processor import Outputs, TableLookup, TableSpec
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.partitioning import key_partition
from kafka_rekey.shared.pipeline import DeadLetter, RecordPipeline, Routed
from kafka_rekey.shared.translation import RowIds, SourceRecord, remembers_rows


def remembering_sources(catalog: Catalog) -> tuple[str, ...]:
    """The CDC sources, whose rows' ids the translate stage remembers."""
    return tuple(source.name for source in catalog.sources if remembers_rows(source.translation))


def with_source_timestamp(dead: DeadLetter, record: SourceRecord) -> list[tuple[str, bytes]]:
    """A dead letter's headers and `dlq.source.timestamp`, the source record's timestamp (epoch ms), when it has
    one: the dead letter's own timestamp is when it was dead-lettered."""
    if record.timestamp_ms is None:
        return dead.headers
    return [*dead.headers, ("dlq.source.timestamp", str(record.timestamp_ms).encode())]


class TranslateStage:

    def __init__(self, catalog: Catalog, pipeline: RecordPipeline, sequencing_topic: str, group_id: str,
                 top_orgs: TopOrgs, service: str, handed_off: Mapping[tuple[str, bytes], RowIds] | None = None) -> None:
        """`handed_off`: the row ids of a backfill's hand-off (`services.handoff`)."""
        self.rows = RowTables(remembering_sources(catalog), group_id, handed_off)
        self.tables: Sequence[TableSpec] = self.rows.specs
        self.processors = {source.name: pipeline.processor(source.translation, source.feeds,
                                                           self.rows if source.name in self.rows.names else None)
                           for source in catalog.sources}
        self.topics = tuple(self.processors)
        self.sequencing_topic = sequencing_topic
        self.top_orgs = top_orgs
        self.service = service

    def process(self, messages: Sequence[Message], outputs: Outputs, tables: TableLookup) -> int:
        dead: Counter[str] = Counter()
        skipped: Counter[str] = Counter()
        produce, sequencing, processors = outputs.produce, self.sequencing_topic, self.processors
        partitions = outputs.partitions(sequencing)
        envelopes: dict[int, list[Envelope]] = {}
        rows = self.rows
        rows.tables, remembering = tables, rows.names
        for message in messages:
            topic = message.topic()
            headers = message.headers()
            record = SourceRecord(topic, message.partition(), message.offset(), message.key(), message.value(),
                                  dict(headers) if headers else {}, message.timestamp()[1])
            result = processors[topic](record)
            if topic in remembering and isinstance(result, Routed):
                rows.learn(record, result.draft)
            if isinstance(result, Routed):
                self.top_orgs.add(result.draft.org_id)
                for domain in result.records:
                    partition = key_partition(domain.route.key.encode(), partitions)
                    envelopes.setdefault(partition, []).append(Envelope.of(domain))
            elif isinstance(result, DeadLetter):
                produce(result.topic, result.key, result.value, None, with_source_timestamp(result, record))
                dead[result.pill.reason_code] += 1
            else:
                skipped[result.reason] += 1
        for partition, items in envelopes.items():
            for value in encode_envelopes(items):
                produce(sequencing, None, value, partition)
        for reason, count in dead.items():
            DEAD_LETTERED.labels(self.service, reason).inc(count)
        for reason, count in skipped.items():
            SKIPPED.labels(self.service, reason).inc(count)
        self.top_orgs.export_due(time.monotonic())
        return len(messages)

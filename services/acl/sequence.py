"""The ACL's sequence stage: envelopes -> `shared.sequencing.sequence_step` against the key's state -> the domain
record with its dense sequence spliced into the Avro value and the `seq`/`src` headers.

State per sequencing partition: `sequences` (output key -> last sequence) and `seen` (output key and dedupe id
-> sequence, source position, when remembered), both changelogged; a `seen` entry older than the dedupe
horizon is forgotten (its changelog's retention is the horizon too). `seen` gains an entry per event, so its
changelog is batched: a checkpoint writes its new entries in a few records, not one record per event.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import Message

from services.acl.envelope import decode_envelopes
from services.handoff import HandoffSequences
from services.runtime.metrics import SKIPPED
from services.runtime.processor import Outputs, TableLookup, TableSpec
from services.runtime.state import Table
from shared.avro import stamp_sequence
from shared.handoff import sequence_key
from shared.pipeline import sequence_headers
from shared.sequencing import Duplicate, SeenEntry, sequence_step

SEQUENCES, SEEN = "sequences", "seen"
RECENT_KEYS = 16_384
"""Output keys whose last sequence each sequencing partition's table keeps in memory: a key's events come in
bursts (an interaction's life)."""


class SequenceStage:

    def __init__(self, sequencing_topic: str, group_id: str, handoff: HandoffSequences, horizon_hours: float,
                 service: str) -> None:
        self.topics = (sequencing_topic,)
        self.horizon_ms = int(horizon_hours * 3_600_000)
        self.tables = (
            TableSpec(SEQUENCES, sequencing_topic, f"{group_id}-sequences-changelog", {"cleanup.policy": "compact"},
                      recent_keys=RECENT_KEYS),
            TableSpec(SEEN, sequencing_topic, f"{group_id}-seen-changelog",
                      {"cleanup.policy": "compact,delete", "retention.ms": str(self.horizon_ms)}, batched=True),
        )
        self.handoff = handoff
        self.service = service

    def process(self, messages: Sequence[Message], outputs: Outputs, tables: TableLookup) -> int:
        now_ms = int(time.time() * 1000)
        oldest_remembered = now_ms - self.horizon_ms
        duplicates = items = 0
        produce, last_handed_off = outputs.produce, self.handoff.last_sequence
        by_partition: dict[int, tuple[Table, Table]] = {}
        for message in messages:
            partition, offset = message.partition(), message.offset()
            partition_tables = by_partition.get(partition)
            if partition_tables is None:
                partition_tables = by_partition[partition] = (tables(SEQUENCES, partition), tables(SEEN, partition))
            sequences, seen = partition_tables
            envelopes = decode_envelopes(message.value())
            items += len(envelopes)
            for envelope in envelopes:
                name = sequence_key(envelope.topic, envelope.key)
                key = name.encode()
                seen_key = key + b"|" + envelope.dedupe_id.encode()
                state, remembered = sequences.get(key), seen.get(seen_key)
                entry = (SeenEntry(remembered[0], remembered[1])
                         if remembered is not None and remembered[2] >= oldest_remembered else None)
                step = sequence_step(None if state is None else state[0], last_handed_off(name), entry, envelope.src)
                if isinstance(step.decision, Duplicate):
                    duplicates += 1
                    continue
                sequence = step.decision.sequence
                if step.last is not None:
                    sequences.put(key, [step.last], offset)
                if step.seen is not None:
                    seen.put(seen_key, [step.seen.sequence, step.seen.source, now_ms], offset)
                produce(envelope.topic, envelope.key.encode(), stamp_sequence(envelope.head, sequence, envelope.tail),
                        None, sequence_headers(sequence, envelope.src))
        if duplicates:
            SKIPPED.labels(self.service, "duplicate").inc(duplicates)
        return items

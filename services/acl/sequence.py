"""The ACL's sequence stage: envelopes -> `shared.sequencing.sequence_step` against the key's state -> the domain
record with its dense sequence spliced into the Avro value and the `seq`/`src` headers.

State per sequencing partition: `sequences` (output key -> last sequence) and `seen` (output key and dedupe id
-> sequence, source position, when remembered), both changelogged; a `seen` entry older than the dedupe
horizon is forgotten (its changelog, never compacted, is deleted past the horizon too). `seen` gains an entry per
event, so its changelog is batched: a checkpoint writes its new entries in a few records, not one record per event.

With a sequences horizon (`REKEY_SEQUENCE_IDLE_DAYS`), each batch also sweeps a few stored keys of the partitions it
touched, in key order, and forgets those idle past the horizon (`shared.sequencing.horizon`): the key's state is
tombstoned and its last sequence kept in a forgotten record, from which a later event of the key continues.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import Message
from prometheus_client import Counter

from kafka_rekey.services.acl.envelope import decode_envelopes
from kafka_rekey.services.handoff import HandoffSequences
from kafka_rekey.services.runtime.metrics import SKIPPED
from kafka_rekey.services.runtime.processor import Outputs, TableLookup, TableSpec
from kafka_rekey.services.runtime.state import Table
from kafka_rekey.services.runtime.topics import changelog_config, expiring_changelog_config
from kafka_rekey.shared.avro import stamp_sequence
from kafka_rekey.shared.handoff import sequence_key
from kafka_rekey.shared.pipeline import sequence_headers
from kafka_rekey.shared.sequencing import Duplicate, SeenEntry, sequence_step
from kafka_rekey.shared.sequencing.horizon import (
    DAY_MS,
    KeyState,
    continued_from,
    forgotten_key,
    is_forgotten_record,
    is_idle,
)

SEQUENCES, SEEN = "sequences", "seen"
FORGOTTEN = Counter("rekey_sequences_forgotten_total", "Output keys forgotten by the sequences horizon.", ["service"])
RECENT_KEYS = 16_384
"""Output keys whose last sequence each sequencing partition's table keeps in memory: a key's events come in
bursts (an interaction's life)."""
SWEEP_KEYS = 256
"""Stored keys a batch looks at for idleness per sequencing partition it touched: a full pass over the state takes
many batches, so the sweep adds little to any one of them."""


class SequenceStage:

    def __init__(self, sequencing_topic: str, group_id: str, handoff: HandoffSequences, horizon_hours: float,
                 service: str, idle_days: float | None = None) -> None:
        """`idle_days`: the sequences horizon (None: keys are never forgotten)."""
        self.topics = (sequencing_topic,)
        self.horizon_ms = int(horizon_hours * 3_600_000)
        self.idle_ms = None if idle_days is None else int(idle_days * DAY_MS)
        self.swept_to: dict[int, bytes] = {}
        """Per sequencing partition, the last key the sweep looked at (a pass starts over after the last key)."""
        self.tables = (
            TableSpec(SEQUENCES, sequencing_topic, f"{group_id}-sequences-changelog", changelog_config(),
                      recent_keys=RECENT_KEYS),
            TableSpec(SEEN, sequencing_topic, f"{group_id}-seen-changelog",
                      expiring_changelog_config(self.horizon_ms), batched=True),
        )
        self.handoff = handoff
        self.service = service

    def process(self, messages: Sequence[Message], outputs: Outputs, tables: TableLookup) -> int:
        now_ms = int(time.time() * 1000)
        oldest_remembered = now_ms - self.horizon_ms
        duplicates = items = 0
        produce, last_handed_off = outputs.produce, self.handoff.last_sequence
        by_partition: dict[int, tuple[Table, Table]] = {}
        last_offsets: dict[int, int] = {}
        for message in messages:
            partition, offset = message.partition(), message.offset()
            last_offsets[partition] = offset
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
                last = state[0] if state is not None else self._forgotten_last(sequences, key, last_handed_off(name))
                step = sequence_step(last, last_handed_off(name), entry, envelope.src)
                if isinstance(step.decision, Duplicate):
                    duplicates += 1
                    continue
                sequence = step.decision.sequence
                if step.last is not None:
                    sequences.put(key, [step.last, now_ms], offset)
                if step.seen is not None:
                    seen.put(seen_key, [step.seen.sequence, step.seen.source, now_ms], offset)
                produce(envelope.topic, envelope.key.encode(), stamp_sequence(envelope.head, sequence, envelope.tail),
                        None, sequence_headers(sequence, envelope.src))
        if duplicates:
            SKIPPED.labels(self.service, "duplicate").inc(duplicates)
        if self.idle_ms is not None:
            for partition, (sequences, _) in by_partition.items():
                self._forget_idle(sequences, partition, last_offsets[partition], now_ms, self.idle_ms)
        return items

    def _forgotten_last(self, sequences: Table, key: bytes, handoff_last: int) -> int | None:
        """The last sequence of a key without state, from its forgotten record (None: it has none)."""
        if self.idle_ms is None:
            return None
        forgotten = sequences.get(forgotten_key(key))
        return continued_from(None, None if forgotten is None else forgotten[0], handoff_last)

    def _forget_idle(self, sequences: Table, partition: int, offset: int, now_ms: int, idle_ms: int) -> None:
        """Look at the next `SWEEP_KEYS` stored keys of the partition; forget those idle past the horizon as of
        processing the input record at `offset`."""
        found = sequences.scan(self.swept_to.get(partition, b""), SWEEP_KEYS)
        self.swept_to[partition] = found[-1][0] if len(found) == SWEEP_KEYS else b""
        for key, value in found:
            if is_forgotten_record(key):
                continue
            state = KeyState(value[0], value[1] if len(value) > 1 else None)
            if is_idle(state, now_ms, idle_ms):
                sequences.put(forgotten_key(key), [state.last], offset)
                sequences.delete(key)
                FORGOTTEN.labels(self.service).inc()

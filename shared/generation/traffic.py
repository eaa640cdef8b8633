"""The seeded traffic generator: interleaved interaction lifecycles of Zipf-sized tenants, with late and
out-of-order events, redeliveries and malformed records, as a deterministic stream of planned records."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Sequence
from itertools import accumulate
from random import Random

from kafka_rekey.shared.generation.config import MAX_HOLD_BACK, GenerationConfig
from kafka_rekey.shared.generation.formats import ChangeLog, Interaction, between, genesys_event, malformed, uuid_text
from kafka_rekey.shared.generation.records import PlannedRecord, RecordKind
from kafka_rekey.shared.translation import SourceFormat

START_MS = 1_698_364_800_000  # 2023-10-27T00:00:00Z: generated time starts here, never at the wall clock
MEAN_GAP_MS = 20.0
RECENT = 1_000
INTERACTION_TYPES = ("call", "chat", "email", "callback")
INTERACTION_TYPE_CUM = (60, 85, 95, 100)
TRANSFER_CUM = (60, 85, 95, 100)
"""Cumulative weights of 0, 1, 2, 3 transfers in an answered interaction."""
ABANDON_RATE = 0.1
DELETE_RATE = 0.05  # Debezium only: share of finished interactions whose row is deleted


def _draw(rng: Random, cum_weights: Sequence[float]) -> int:
    """Index drawn with the given cumulative weights (`random.choices` without its per-call overhead)."""
    return bisect.bisect(cum_weights, rng.random() * cum_weights[-1])


def generate(config: GenerationConfig) -> Iterator[PlannedRecord]:
    """Yield exactly `config.events` records in send order; the same config always yields the same records."""
    return _Traffic(config).records()


class _Traffic:
    def __init__(self, config: GenerationConfig) -> None:
        self.config = config
        self.rng = Random(config.seed)
        self.orgs = config.org_names()
        self.cum_weights = list(accumulate(1.0 / rank**config.zipf for rank in range(1, len(self.orgs) + 1)))
        self.debezium = config.source_format is SourceFormat.DEBEZIUM
        self.changes = ChangeLog(self.rng)
        self.clock_ms = START_MS
        self.active: list[Interaction] = []
        self.held: list[tuple[int, int, PlannedRecord]] = []
        self.held_count = 0
        self.pending: list[PlannedRecord] = []
        self.recent: list[PlannedRecord] = []
        self.sent = 0

    def records(self) -> Iterator[PlannedRecord]:
        total = self.config.events
        recent = self.recent
        while self.sent < total:
            record = self._next(total - self.sent)
            record.index = self.sent
            self.sent += 1
            if record.kind is RecordKind.EVENT:
                if len(recent) < RECENT:
                    recent.append(record)
                else:
                    recent[self.sent % RECENT] = record
            yield record

    def _next(self, remaining: int) -> PlannedRecord:
        config, rng = self.config, self.rng
        while True:
            if self.pending:
                return self.pending.pop()
            if self.held and (self.held[0][0] <= self.sent or remaining <= len(self.held)):
                return heapq.heappop(self.held)[2]
            draw = rng.random()
            if draw < config.malformed_rate:
                interaction = self.active[self._interaction()]
                return malformed(rng, interaction, self.debezium, self.changes, self._tick())
            if draw < config.malformed_rate + config.duplicate_rate and self.recent:
                original = self.recent[rng.randrange(len(self.recent))]
                return PlannedRecord(RecordKind.DUPLICATE, original.key, original.value, original.event_id,
                                     original.org_id, original.interaction_id, original.event_type,
                                     original.event_time_ms, duplicate_of=original.index)
            record = self._event(room=remaining - len(self.held))
            if config.late_rate and not self.pending and rng.random() < config.late_rate:
                record.late = True
                self.held_count += 1
                heapq.heappush(self.held, (self.sent + rng.randint(10, MAX_HOLD_BACK), self.held_count, record))
                continue
            return record

    def _tick(self) -> int:
        self.clock_ms += int(self.rng.expovariate(1.0 / MEAN_GAP_MS)) + 1
        return self.clock_ms

    def _interaction(self) -> int:
        """The position in `active` of an interaction in progress, or of a new one when fewer than
        `concurrency` are."""
        if len(self.active) < self.config.concurrency:
            self.active.append(self._start())
            return len(self.active) - 1
        return int(self.rng.random() * len(self.active))

    def _start(self) -> Interaction:
        rng = self.rng
        org_id = self.orgs[_draw(rng, self.cum_weights)]
        interaction_type = INTERACTION_TYPES[_draw(rng, INTERACTION_TYPE_CUM)]
        if rng.random() < ABANDON_RATE:
            steps = ["start", "end"]
        else:
            transfers = _draw(rng, TRANSFER_CUM)
            steps = ["start", "answer", *["transfer"] * transfers, "end"]
        if self.debezium and rng.random() < DELETE_RATE:
            steps.append("delete")
        steps.reverse()
        return Interaction(org_id, uuid_text(rng), interaction_type, f"queue-{between(rng, 1, 39):02d}",
                           f"+1555{between(rng, 0, 10**7 - 1):07d}", self.clock_ms, steps)

    def _event(self, room: int) -> PlannedRecord:
        while True:
            position = self._interaction()
            interaction = self.active[position]
            step = interaction.steps.pop()
            if not interaction.steps:
                self.active[position] = self.active[-1]
                self.active.pop()
            if step != "delete" or room >= 2:
                break  # (a delete needs a second slot for its tombstone; without one, the row stays)
        now_ms = self._tick()
        if not self.debezium:
            return genesys_event(self.rng, interaction, step, now_ms)
        record = self.changes.change(interaction, step, now_ms)
        if step == "delete":
            self.pending.append(self.changes.tombstone(interaction))
        return record

"""Rendering interaction steps as source records: contact-centre event JSON or Debezium change events.

Both renderers draw every random choice from the generator's seeded `Random`, so output is reproducible.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from random import Random

from kafka_rekey.shared.generation.records import PlannedRecord, RecordKind
from kafka_rekey.shared.translation import cdc_event_id

CDC_TABLE = "public.interactions"
_DEBEZIUM_OPS = {"start": "c", "delete": "d"}
_STATUS = {"start": "queued", "answer": "active", "transfer": "transferred"}
_CDC_EVENT_TYPES = {"c": "created", "u": "updated", "d": "deleted"}
BAD_TIMESTAMPS = ("yesterday", "2023-13-45T99:00:00Z", "27/10/2023 14:30", "2023-10-27T14:30:00", "")
MALFORMED_REASONS = ("undecodable", "missing_org_id", "bad_timestamp")


@dataclass(slots=True)
class Interaction:
    """One interaction's state while its lifecycle steps are being sent."""

    org_id: str
    interaction_id: str
    interaction_type: str
    queue_id: str
    caller: str
    started_ms: int
    steps: list[str]
    """Remaining steps, last one next."""
    agent_id: str | None = None
    answered: bool = False


def between(rng: Random, low: int, high: int) -> int:
    """A uniform integer in [low, high]; a cheaper `randint` for the hot path (still seeded)."""
    return low + int(rng.random() * (high - low + 1))


def uuid_text(rng: Random) -> str:
    """A random (version 4 layout) UUID drawn from the seeded generator."""
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def iso_millis(ms: int) -> str:
    """`2023-10-27T14:30:00.123Z` for epoch milliseconds (UTC)."""
    return f"{_iso_second(ms // 1000)}.{ms % 1000:03d}Z"


@functools.lru_cache(maxsize=1024)
def _iso_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def arbitrary_key(rng: Random, event_id: str) -> bytes | None:
    """Keys as badly keyed upstreams send them: none, the event id, or a random token."""
    draw = rng.random()
    if draw < 0.4:
        return None
    if draw < 0.7:
        return event_id.encode()
    return f"{rng.getrandbits(32):08x}".encode()


_ENCODER = json.JSONEncoder(separators=(",", ":"))


def _dumps(value: object) -> bytes:
    return _ENCODER.encode(value).encode()


def _step_data(rng: Random, interaction: Interaction, step: str, now_ms: int) -> dict[str, object]:
    if step == "start":
        return {"callerNumber": interaction.caller, "queueId": interaction.queue_id, "direction": "inbound"}
    if step == "answer":
        interaction.agent_id = f"agent-{between(rng, 1, 4999):04d}"
        interaction.answered = True
        return {"agentId": interaction.agent_id, "queueId": interaction.queue_id}
    if step == "transfer":
        previous, interaction.agent_id = interaction.agent_id, f"agent-{between(rng, 1, 4999):04d}"
        return {"fromAgentId": previous, "toAgentId": interaction.agent_id, "queueId": interaction.queue_id}
    return {
        "agentId": interaction.agent_id,
        "disposition": "completed" if interaction.answered else "abandoned",
        "durationMs": now_ms - interaction.started_ms,
    }


def genesys_event(rng: Random, interaction: Interaction, step: str, now_ms: int) -> PlannedRecord:
    event_id = uuid_text(rng)
    value = {
        "orgId": interaction.org_id,
        "interactionId": interaction.interaction_id,
        "eventId": event_id,
        "interactionType": interaction.interaction_type,
        "eventType": step,
        "timestamp": iso_millis(now_ms),
        "data": _step_data(rng, interaction, step, now_ms),
    }
    return PlannedRecord(RecordKind.EVENT, arbitrary_key(rng, event_id), _dumps(value), event_id,
                         interaction.org_id, interaction.interaction_id, step, now_ms)


def _column(field: str, kind: str = "string", optional: bool = True, name: str | None = None) -> dict[str, object]:
    column: dict[str, object] = {"type": kind, "optional": optional}
    if name is not None:
        column.update(name=name, version=1)
    return {**column, "field": field}


_ROW_FIELDS = [_column("id", "int64", optional=False), _column("org_id", optional=False),
               _column("interaction_id", optional=False), _column("status", optional=False),
               _column("interaction_type"), _column("agent_id"), _column("queue_id"),
               _column("updated_at", optional=False, name="io.debezium.time.ZonedTimestamp")]
_SOURCE_FIELDS = [_column("version", optional=False), _column("connector", optional=False),
                  _column("name", optional=False), _column("ts_ms", "int64", optional=False),
                  {**_column("snapshot", name="io.debezium.data.Enum"),
                   "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,"
                                             "incremental"}, "default": "false"},
                  _column("db", optional=False), _column("sequence"), _column("ts_us", "int64"),
                  _column("ts_ns", "int64"), _column("schema", optional=False), _column("table", optional=False),
                  _column("txId", "int64"), _column("lsn", "int64"), _column("xmin", "int64")]
VALUE_SCHEMA: dict[str, object] = {
    # What the JSON converter (schemas.enable=true, its default) writes beside every change of the table.
    "type": "struct", "optional": False, "name": "cc.public.interactions.Envelope", "version": 2, "fields": [
        {"type": "struct", "fields": _ROW_FIELDS, "optional": True, "name": "cc.public.interactions.Value",
         "field": "before"},
        {"type": "struct", "fields": _ROW_FIELDS, "optional": True, "name": "cc.public.interactions.Value",
         "field": "after"},
        {"type": "struct", "fields": _SOURCE_FIELDS, "optional": False,
         "name": "io.debezium.connector.postgresql.Source", "version": 1, "field": "source"},
        {"type": "struct", "fields": [_column("id", optional=False), _column("total_order", "int64", optional=False),
                                      _column("data_collection_order", "int64", optional=False)],
         "optional": True, "name": "event.block", "version": 1, "field": "transaction"},
        _column("op", optional=False), _column("ts_ms", "int64"), _column("ts_us", "int64"), _column("ts_ns", "int64"),
    ]}
KEY_SCHEMA: dict[str, object] = {"type": "struct", "fields": [_column("id", "int64", optional=False)],
                                 "optional": False, "name": "cc.public.interactions.Key"}


class ChangeLog:
    """The Debezium side, as its PostgreSQL connector writes through the JSON converter with schemas: a growing
    LSN and transaction id for the `interactions` table, whose surrogate key `id` keys every change of a row
    (deletes carry the whole row: REPLICA IDENTITY FULL)."""

    def __init__(self, rng: Random, lsn: int = 24_023_128, tx_id: int = 771) -> None:
        self.rng = rng
        self.lsn = lsn
        self.tx_id = tx_id
        self.row_ids: dict[str, int] = {}

    def row_key(self, interaction: Interaction) -> bytes:
        row_id = self.row_ids.setdefault(interaction.interaction_id, len(self.row_ids) + 1)
        return _dumps({"schema": KEY_SCHEMA, "payload": {"id": row_id}})

    def change(self, interaction: Interaction, step: str, now_ms: int) -> PlannedRecord:
        rng = self.rng
        self.lsn += between(rng, 40, 400)
        self.tx_id += 1
        op = _DEBEZIUM_OPS.get(step, "u")
        if step != "delete":
            _step_data(rng, interaction, step, now_ms)
        status = _STATUS.get(step) or ("completed" if interaction.answered else "abandoned")
        key = self.row_key(interaction)
        row = {"id": self.row_ids[interaction.interaction_id], **self.row(interaction, status, now_ms)}
        commit_ms = now_ms + between(rng, 0, 5)
        emitted_ms = commit_ms + between(rng, 1, 50)
        value = {
            "before": row if op == "d" else None,
            "after": None if op == "d" else row,
            "source": {
                "version": "3.6.1.Final", "connector": "postgresql", "name": "cc", "ts_ms": commit_ms,
                "snapshot": "false", "db": "cc", "sequence": f'["{self.lsn - 64}","{self.lsn}"]',
                "ts_us": commit_ms * 1000, "ts_ns": commit_ms * 1_000_000, "schema": "public",
                "table": "interactions", "txId": self.tx_id, "lsn": self.lsn, "xmin": None,
            },
            "transaction": None,
            "op": op,
            "ts_ms": emitted_ms, "ts_us": emitted_ms * 1000, "ts_ns": emitted_ms * 1_000_000,
        }
        event_id = cdc_event_id(CDC_TABLE, f"lsn={self.lsn}", op, interaction.org_id, interaction.interaction_id)
        return PlannedRecord(RecordKind.EVENT, key, _dumps({"schema": VALUE_SCHEMA, "payload": value}), event_id,
                             interaction.org_id, interaction.interaction_id, _CDC_EVENT_TYPES[op],
                             commit_ms if op == "d" else now_ms)

    @staticmethod
    def row(interaction: Interaction, status: str, now_ms: int) -> dict[str, object]:
        return {
            "org_id": interaction.org_id,
            "interaction_id": interaction.interaction_id,
            "status": status,
            "interaction_type": interaction.interaction_type,
            "agent_id": interaction.agent_id,
            "queue_id": interaction.queue_id,
            "updated_at": iso_millis(now_ms),
        }

    def tombstone(self, interaction: Interaction) -> PlannedRecord:
        return PlannedRecord(RecordKind.TOMBSTONE, self.row_key(interaction), None, None, interaction.org_id,
                             interaction.interaction_id, None, None)


def malformed(rng: Random, interaction: Interaction, debezium: bool, changes: ChangeLog, now_ms: int) -> PlannedRecord:
    """A poison pill of a random kind, dressed as a plausible record of `interaction`."""
    reason = MALFORMED_REASONS[rng.randrange(len(MALFORMED_REASONS))]
    event_id = uuid_text(rng)
    if debezium:
        row: dict[str, object] = ChangeLog.row(interaction, "active", now_ms)
        document: dict[str, object] = {"before": None, "after": row, "op": "u", "ts_ms": now_ms,
                                       "source": {"schema": "public", "table": "interactions", "lsn": changes.lsn}}
        fields = row
        org_field, time_field = "org_id", "updated_at"
    else:
        fields = document = {"orgId": interaction.org_id, "interactionId": interaction.interaction_id,
                             "eventId": event_id, "eventType": "answer", "timestamp": iso_millis(now_ms)}
        org_field, time_field = "orgId", "timestamp"
    org_id: str | None = interaction.org_id
    if reason == "missing_org_id":
        if rng.random() < 0.5:
            del fields[org_field]
        else:
            fields[org_field] = ""
        org_id = None
    elif reason == "bad_timestamp":
        fields[time_field] = BAD_TIMESTAMPS[rng.randrange(len(BAD_TIMESTAMPS))]
    value = _dumps(document)
    if reason == "undecodable":
        variant = rng.randrange(3)
        if variant == 0:
            value = value[: rng.randrange(1, len(value))]  # truncated JSON
        elif variant == 1:
            value = b"\xff" + rng.randbytes(rng.randrange(8, 64))  # binary garbage, not UTF-8
        else:
            value = value.replace(b'"', b'"\xe9', 1)  # Latin-1 byte inside JSON: not UTF-8
    return PlannedRecord(RecordKind.MALFORMED, arbitrary_key(rng, event_id), value, None if debezium else event_id,
                         org_id, interaction.interaction_id, None, now_ms, malformed_reason=reason)

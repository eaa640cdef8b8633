"""Debezium change events of the `interactions` table -> domain event draft.

The table (PostgreSQL, primary key `(org_id, interaction_id)`, so even a delete's `before` image with the
default replica identity carries both ids):

    org_id text, interaction_id text, status text (queued|ringing|active|transferred|completed|abandoned),
    interaction_type text (call|chat|email|callback), agent_id text null, queue_id text null,
    updated_at timestamptz

Values come from the JSON converter, with (`{"schema": ..., "payload": {...}}`) or without the wrapper; with
Debezium's default `time.precision.mode`, `timestamptz` arrives as an ISO-8601 string (ZonedTimestamp). Integer
ids are accepted and rendered in decimal.

- op c/u/r use the `after` image, op d the `before` image; event types are created/updated/snapshot/deleted.
- Event time: the row's `updated_at` for c/u/r; for d, `source.ts_ms` (when the delete committed).
- Ordering token: `source.lsn`, or `source.ts_ms` when the connector gives no LSN.
- Event id = dedupe id = `<schema>.<table>:lsn=<lsn>|ts=<ts_ms>:<op>:<org_id>:<interaction_id>`: a redelivered
  change repeats it; the row ids keep snapshot rows (which share one LSN) apart. Sources without an LSN
  dedupe by commit millisecond, so two same-op changes of one row within one millisecond would collapse.
- The tombstone (null value) after a delete and truncates (op t) are skips.
"""

from __future__ import annotations

from typing import Any

from shared.sequencing import SourcePosition
from shared.translation.fields import (
    canonical_json,
    fail,
    identifier,
    iso_millis,
    json_object,
    long_value,
    optional_text,
    text,
)
from shared.translation.outcomes import DomainEventDraft, Outcome, PoisonReason, Skip, SkipReason
from shared.translation.source import SourceRecord

EVENT_TYPES = {"c": "created", "u": "updated", "d": "deleted", "r": "snapshot"}


def cdc_event_id(table: str, position: str, op: str, org_id: str, interaction_id: str) -> str:
    """The event id (and dedupe id) of a change: `table` schema-qualified, `position` `lsn=N` or `ts=N`."""
    return f"{table}:{position}:{op}:{org_id}:{interaction_id}"


def translate_change(record: SourceRecord) -> Outcome:
    if record.value is None:
        return Skip(SkipReason.TOMBSTONE, "tombstone (null value) following a delete")
    change = json_object(record.value, "change event value")
    if "payload" in change and "schema" in change:
        change = change["payload"]
        if change is None:
            return Skip(SkipReason.TOMBSTONE, "null payload in the schema wrapper")
        if not isinstance(change, dict):
            fail(PoisonReason.SCHEMA_INVALID, "payload of the schema wrapper is not an object", "payload")
    op = change.get("op")
    if op == "t":
        return Skip(SkipReason.TRUNCATE, "truncate of the table")
    if not isinstance(op, str) or op not in EVENT_TYPES:
        fail(PoisonReason.SCHEMA_INVALID, f"op {str(op)[:16]!r} is not one of c, u, d, r, t", "op")
    source = _object(change, "source")
    image = "before" if op == "d" else "after"
    row = _object(change, image)
    org_id = identifier(row, "org_id", PoisonReason.MISSING_ORG_ID, allow_int=True, label=f"{image}.org_id")
    interaction_id = identifier(row, "interaction_id", PoisonReason.MISSING_INTERACTION_ID, allow_int=True,
                                label=f"{image}.interaction_id")
    if op == "d":
        event_time_ms = long_value(source.get("ts_ms"), "source.ts_ms", PoisonReason.BAD_TIMESTAMP)
    else:
        event_time_ms = iso_millis(row.get("updated_at"), f"{image}.updated_at")
    ordering_token, position = _position(source)
    if not source.get("table"):
        fail(PoisonReason.SCHEMA_INVALID, "source.table is missing", "source.table")
    table = ".".join(text(source[part], f"source.{part}") for part in ("schema", "table") if source.get(part))
    event_id = cdc_event_id(table, position, op, org_id, interaction_id)
    return DomainEventDraft(
        org_id=org_id,
        interaction_id=interaction_id,
        event_id=event_id,
        event_type=EVENT_TYPES[op],
        interaction_type=optional_text(row, "interaction_type", f"{image}.interaction_type"),
        event_time_ms=event_time_ms,
        source=SourcePosition(record.topic, record.partition, record.offset),
        ordering_token=ordering_token,
        change_op=op,
        payload=canonical_json(row, image),
        dedupe_id=event_id,
    )


def _object(change: dict[str, Any], name: str) -> dict[str, Any]:
    value = change.get(name)
    if not isinstance(value, dict):
        fail(PoisonReason.SCHEMA_INVALID, f"{name} is {'missing' if value is None else 'not an object'}", name)
    return value


def _position(source: dict[str, Any]) -> tuple[int, str]:
    if source.get("lsn") is not None:
        lsn = long_value(source["lsn"], "source.lsn")
        return lsn, f"lsn={lsn}"
    if source.get("ts_ms") is not None:
        ts_ms = long_value(source["ts_ms"], "source.ts_ms")
        return ts_ms, f"ts={ts_ms}"
    fail(PoisonReason.SCHEMA_INVALID, "source.lsn and source.ts_ms are both missing", "source.lsn")

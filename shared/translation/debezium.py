"""Debezium change events of the `interactions` table -> domain event draft.

The table (PostgreSQL, primary key `(org_id, interaction_id)`, so even a delete's `before` image with the
default replica identity carries both ids):

    org_id text, interaction_id text, status text (queued|ringing|active|transferred|completed|abandoned),
    interaction_type text (call|chat|email|callback), agent_id text null, queue_id text null,
    updated_at timestamptz

Values come from the JSON converter, with (`{"schema": ..., "payload": {...}}`) or without the wrapper, or from
the Avro converter (Confluent wire format, `shared.translation.avro_values`; keys too). Integer ids are accepted
and rendered in decimal. `updated_at` is read as the connector encodes it (`shared.translation.timestamps`):
`timestamptz` as an ISO-8601 string (ZonedTimestamp), `timestamp` as epoch micro- or milliseconds
(MicroTimestamp with the default `time.precision.mode`, Timestamp with `connect`); the schema block or the Avro
writer schema names the type when there is one, the magnitude decides when there is none.

- op c/u/r use the `after` image, op d the `before` image; event types are created/updated/snapshot/deleted.
- Event time: the row's `updated_at` for c/u/r; for d, `source.ts_ms` (when the delete committed), or the
  envelope's `ts_ms` when the source's is missing or 0 (some connectors leave it 0 in snapshots).
- Ordering token: `source.lsn`, or the commit time as above when the connector gives no LSN.
- Event id = dedupe id = `<schema>.<table>:<position>:<op>:<org_id>:<interaction_id>`, the position being
  `lsn=<lsn>` (PostgreSQL), `binlog=<file>:<pos>:<row>` (MySQL; ordering token file number << 32 | pos) or
  `ts=<ts_ms>`: a redelivered change repeats it; the row ids keep snapshot rows (which share one LSN) apart.
  Sources with neither dedupe by commit millisecond, so two same-op changes of one row within one millisecond
  would collapse.
- A delete whose `before` image lacks the ids (replica identity of the primary key only, and a key other than
  the two ids) takes them from the record key.
- The tombstone (null value, or a null payload in the schema wrapper) after a delete, truncates (op t), logical
  decoding messages (op m) and the transaction metadata topic's BEGIN/END records are counted skips.

A catalog source names other columns with `columns` (`DebeziumColumns`); the defaults are the table above.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from pydantic import BaseModel, ConfigDict, Field

from shared.sequencing import SourcePosition
from shared.translation.avro_values import AvroValues, value_object
from shared.translation.fields import (
    Invalid,
    canonical_json,
    fail,
    identifier,
    long_value,
    optional_text,
    text,
)
from shared.translation.outcomes import DomainEventDraft, Outcome, PoisonReason, Skip, SkipReason
from shared.translation.source import SourceRecord
from shared.translation.timestamps import encoding_of_connect_type, epoch_millis

EVENT_TYPES = {"c": "created", "u": "updated", "d": "deleted", "r": "snapshot"}


class DebeziumColumns(BaseModel):
    """The columns of the captured table that hold what a domain event needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    org_id: str = Field(default="org_id", min_length=1)
    interaction_id: str = Field(default="interaction_id", min_length=1)
    event_time: str = Field(default="updated_at", min_length=1)
    interaction_type: str | None = "interaction_type"


DEFAULT_COLUMNS = DebeziumColumns()


def cdc_event_id(table: str, position: str, op: str, org_id: str, interaction_id: str) -> str:
    """The event id (and dedupe id) of a change: `table` schema-qualified, `position` `lsn=N` or `ts=N`."""
    return f"{table}:{position}:{op}:{org_id}:{interaction_id}"


def translate_change(record: SourceRecord, avro: AvroValues | None = None,
                     columns: DebeziumColumns = DEFAULT_COLUMNS) -> Outcome:
    """`avro`: reads values and keys of the Avro converter (without it they are poison pills)."""
    if record.value is None:
        return Skip(SkipReason.TOMBSTONE, "tombstone (null value) following a delete")
    change, writer = value_object(record.value, "change event value", avro)
    schema: object = None
    if writer is None and "payload" in change and "schema" in change:
        schema = change["schema"]
        change = change["payload"]
        if change is None:
            return Skip(SkipReason.TOMBSTONE, "null payload in the schema wrapper")
        if not isinstance(change, dict):
            fail(PoisonReason.SCHEMA_INVALID, "payload of the schema wrapper is not an object", "payload")
    op = change.get("op")
    if op == "t":
        return Skip(SkipReason.TRUNCATE, "truncate of the table")
    if op == "m":
        return Skip(SkipReason.MESSAGE, "logical decoding message (names no row)")
    if op is None and change.get("status") in ("BEGIN", "END"):
        return Skip(SkipReason.TRANSACTION, f"transaction {change['status']} record")
    if not isinstance(op, str) or op not in EVENT_TYPES:
        fail(PoisonReason.SCHEMA_INVALID, f"op {str(op)[:16]!r} is not one of c, u, d, r, t", "op")
    source = _object(change, "source")
    image, row = _deleted_row(change, record.key, columns, avro) if op == "d" else ("after", _object(change, "after"))
    org_id = identifier(row, columns.org_id, PoisonReason.MISSING_ORG_ID, allow_int=True,
                        label=f"{image}.{columns.org_id}")
    interaction_id = identifier(row, columns.interaction_id, PoisonReason.MISSING_INTERACTION_ID, allow_int=True,
                                label=f"{image}.{columns.interaction_id}")
    if op == "d":
        event_time_ms = long_value(_commit_ms(change, source), "source.ts_ms", PoisonReason.BAD_TIMESTAMP)
    else:
        time_type = writer.connect_names.get((image, columns.event_time)) if writer is not None \
            else _schema_block_name(schema, image, columns.event_time)
        event_time_ms = epoch_millis(row.get(columns.event_time), f"{image}.{columns.event_time}",
                                     encoding_of_connect_type(time_type))
    ordering_token, position = _position(source, _commit_ms(change, source))
    if not source.get("table"):
        fail(PoisonReason.SCHEMA_INVALID, "source.table is missing", "source.table")
    table = ".".join(text(source[part], f"source.{part}") for part in ("schema", "table") if source.get(part))
    event_id = cdc_event_id(table, position, op, org_id, interaction_id)
    return DomainEventDraft(
        org_id=org_id,
        interaction_id=interaction_id,
        event_id=event_id,
        event_type=EVENT_TYPES[op],
        interaction_type=None if columns.interaction_type is None else optional_text(
            row, columns.interaction_type, f"{image}.{columns.interaction_type}"),
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


def _commit_ms(change: dict[str, Any], source: dict[str, Any]) -> object:
    """When the change committed: `source.ts_ms`, else (missing or 0) the envelope's `ts_ms`."""
    committed = source.get("ts_ms")
    return change.get("ts_ms", committed) if committed in (None, 0) else committed


def _position(source: dict[str, Any], commit_ms: object) -> tuple[int, str]:
    if source.get("lsn") is not None:
        lsn = long_value(source["lsn"], "source.lsn")
        return lsn, f"lsn={lsn}"
    if source.get("file") is not None and source.get("pos") is not None:  # MySQL: binlog file, position, row
        binlog = text(source["file"], "source.file")
        pos = long_value(source["pos"], "source.pos")
        row = long_value(source.get("row", 0), "source.row")
        sequence = int("".join(filter(str.isdigit, binlog.rpartition(".")[2])) or 0)
        if sequence >= 2**31 or pos >= 2**32:
            fail(PoisonReason.SCHEMA_INVALID, f"source.file {binlog[:64]!r} / pos {pos} out of range", "source.pos")
        return sequence << 32 | pos, f"binlog={binlog}:{pos}:{row}"
    if commit_ms is not None:
        ts_ms = long_value(commit_ms, "source.ts_ms")
        return ts_ms, f"ts={ts_ms}"
    fail(PoisonReason.SCHEMA_INVALID, "source.lsn and source.ts_ms are both missing", "source.lsn")


def _has_ids(row: object, columns: DebeziumColumns) -> TypeGuard[dict[str, Any]]:
    return isinstance(row, dict) and row.get(columns.org_id) is not None \
        and row.get(columns.interaction_id) is not None


def _deleted_row(change: dict[str, Any], key: bytes | None, columns: DebeziumColumns,
                 avro: AvroValues | None) -> tuple[str, dict[str, Any]]:
    """The row a delete names: its `before` image, or the record key when `before` lacks the ids (a table
    without a full replica identity whose primary key is not the two ids writes only its key columns)."""
    before = change.get("before")
    if _has_ids(before, columns):
        return "before", before
    keyed = _key_row(key, avro)
    if keyed is not None and (_has_ids(keyed, columns) or before is None):
        return "key", keyed
    return "before", _object(change, "before")


def _key_row(key: bytes | None, avro: AvroValues | None) -> dict[str, Any] | None:
    """The record key's columns (JSON converter, with or without the schema wrapper, or Avro), if it has any."""
    if not key:
        return None
    try:
        document, writer = value_object(key, "record key", avro)
    except Invalid:
        return None
    if writer is None and "payload" in document and "schema" in document:
        document = document["payload"]
    return document if isinstance(document, dict) else None


def _schema_block_name(schema: object, image: str, column: str) -> object:
    """The Connect type name the JSON converter's schema block gives `image.column` (None when it gives none)."""
    for block in _fields(schema):
        if block.get("field") == image:
            for field in _fields(block):
                if field.get("field") == column:
                    return field.get("name")
    return None


def _fields(block: object) -> list[dict[str, Any]]:
    fields = block.get("fields") if isinstance(block, dict) else None
    return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []

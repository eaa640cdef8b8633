"""Debezium change events of a captured table -> domain event draft.

The default table (PostgreSQL): `org_id text, interaction_id text, status text, interaction_type text,
agent_id text null, queue_id text null, updated_at timestamptz`, under any primary key (a surrogate `id` is the
common case). A catalog source names other columns with `columns` (`DebeziumColumns`), and may take the org and
interaction ids from anywhere a mapping can (`DebeziumSource`: a `column`, a `path` into the change event such as
`source.schema` or `source.db`, the `topic`, a `constant`, with fallbacks), so that a schema- or
database-per-tenant layout without an org column maps too.

Values come from the JSON converter, with (`{"schema": ..., "payload": {...}}`) or without the wrapper, or from
the Avro converter (Confluent wire format, `shared.translation.avro_values`; keys too). Integer ids are accepted
and rendered in decimal. The event-time column is read as the connector encodes it
(`shared.translation.timestamps`); the schema block or the Avro writer schema names the type when there is one,
the magnitude decides when there is none. The payload is the row image in plain values
(`shared.translation.connect_values`: exact decimal strings, ISO-8601 times, unchanged TOASTed columns named, not
passed off as values).

- op c/u/r use the `after` image, op d the `before` image; event types are created/updated/snapshot/deleted.
- A delete whose `before` image lacks the ids (under PostgreSQL's default replica identity it carries only the
  primary key: Debezium writes every other column null, or the column's default) takes them from the record key
  when it holds them, else from the row's earlier changes: the caller's `RowMemory` (the ACL's changelogged table,
  `rekey translate`'s dictionary) remembers each row key's ids as `ids_to_remember` says. A delete of a row never
  seen is a dead letter of its own reason (`unknown_row`). Its payload is then the key's columns, not the nulls
  and defaults of the `before` image.
- Event time: the row's event-time column for c/u/r; for d, `source.ts_ms` (when the delete committed), or the
  envelope's `ts_ms` when the source's is missing or 0 (some connectors leave it 0 in snapshots).
- Ordering token: `source.lsn`, or the commit time as above when the connector gives no LSN.
- Event id = dedupe id = `<schema>.<table>:<position>:<op>:<org_id>:<interaction_id>`, the position being
  `lsn=<lsn>` (PostgreSQL), `binlog=<file>:<pos>:<row>` (MySQL; ordering token file number << 32 | pos) or
  `ts=<ts_ms>`: a redelivered change repeats it; the row ids keep snapshot rows (which share one LSN) apart.
  Sources with neither dedupe by commit millisecond, so two same-op changes of one row within one millisecond
  would collapse.
- Counted skips, never dead letters: the tombstone (null value, or a null payload in the schema wrapper) after a
  delete, truncates (op t), logical decoding messages (op m), the transaction metadata topic's BEGIN/END records
  and the connector's heartbeats (`{"ts_ms": ...}` on its heartbeat topic).
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard

import msgspec
from pydantic import BaseModel, ConfigDict, Field

from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey.shared.translation.avro_values import AvroValues, value_object
from kafka_rekey.shared.translation.connect_values import NO_TYPES, RowTypes, may_hold_unavailable, plain_row
from kafka_rekey.shared.translation.fields import LONG_MAX, Invalid, canonical_json, fail, json_object, long_value, text
from kafka_rekey.shared.translation.mapping import CompiledField, FieldSource, Sources
from kafka_rekey.shared.translation.outcomes import DomainEventDraft, Outcome, PoisonReason, Skip, SkipReason
from kafka_rekey.shared.translation.source import SourceRecord
from kafka_rekey.shared.translation.timestamps import TimeEncoding, encoding_of_connect_type, epoch_millis

EVENT_TYPES = {"c": "created", "u": "updated", "d": "deleted", "r": "snapshot"}
_SCHEMA_AT, _PAYLOAD_AT = b'{"schema":', b',"payload":'
_NO_PREFIX = b"\x00no schema block seen"  # JSON never starts with a NUL byte
_SCHEMA_BLOCKS = 64
"""Distinct schema blocks a translator keeps parsed (a table's, until its schema changes)."""
_TABLE_NAMES = 1024
"""Distinct (schema, table) pairs a translator keeps named."""
RowIds = tuple[str, str]
"""A captured row's org id and interaction id."""
_ROW_CHANGE_OPS = frozenset({"c", "u", "r"})


class _ChangeSource(msgspec.Struct, gc=False):
    """What a row change reads of its `source` block; the block's other fields are skipped undecoded."""

    lsn: Any = None
    schema: str | None = None
    table: str | None = None


class _RowChange(msgspec.Struct, gc=False):
    """What a change of a row's `after` image (op c, u or r) reads of its event."""

    op: Any = None
    after: Any = None
    source: _ChangeSource | None = None


_decode_row_change = msgspec.json.Decoder(_RowChange).decode


class RowMemory(Protocol):
    """The ids of the rows a translator has seen, by source record: what a delete without them looks up."""

    def ids_of(self, record: SourceRecord) -> RowIds | None: ...


class DebeziumColumns(BaseModel):
    """The columns of the captured table that hold what a domain event needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    org_id: str = Field(default="org_id", min_length=1)
    interaction_id: str = Field(default="interaction_id", min_length=1)
    event_time: str = Field(default="updated_at", min_length=1)
    interaction_type: str | None = "interaction_type"


DEFAULT_COLUMNS = DebeziumColumns()


class DebeziumSource(BaseModel):
    """A `debezium` source's declaration: its columns, and where its org and interaction ids are (by default the
    `columns`' org and interaction columns)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    columns: DebeziumColumns = DEFAULT_COLUMNS
    org_id: Sources = ()
    interaction_id: Sources = ()

    def id_sources(self) -> tuple[Sources, Sources]:
        return (self.org_id or (FieldSource(column=self.columns.org_id),),
                self.interaction_id or (FieldSource(column=self.columns.interaction_id),))


DEFAULT_SOURCE = DebeziumSource()


def cdc_event_id(table: str, position: str, op: str, org_id: str, interaction_id: str) -> str:
    """The event id (and dedupe id) of a change: `table` schema-qualified, `position` `lsn=N` or `ts=N`."""
    return f"{table}:{position}:{op}:{org_id}:{interaction_id}"


def ids_to_remember(record: SourceRecord, outcome: Outcome) -> tuple[bytes, RowIds] | None:
    """The row (`row_key`) and ids a translated change teaches a `RowMemory` (None: nothing to remember)."""
    if isinstance(outcome, DomainEventDraft) and outcome.change_op is not None and record.key:
        return row_key(record.key), (outcome.org_id, outcome.interaction_id)
    return None


_last_key_block = [_NO_PREFIX]
"""The start of the last schema-wrapped key seen (`{"schema":<block>,"payload":`): a table's keys share it."""
_ROW_KEYS = 16_384
"""Record keys whose rows are kept named: a row's changes come in bursts (an interaction's life)."""
_row_keys: dict[bytes, bytes] = {}


def row_key(key: bytes) -> bytes:
    """The row a record key names: the key's columns in canonical JSON, without the schema block the JSON converter
    writes into every key (`key.converter.schemas.enable`), which changes when the key column's type does (an `int`
    primary key altered to `bigint`); a key that is not a JSON object (Avro's framed bytes) as it is."""
    row = _row_keys.get(key)
    if row is None:
        if len(_row_keys) >= _ROW_KEYS:
            _row_keys.clear()
        row = _row_keys[key] = _named_row(key)
    return row


def _named_row(key: bytes) -> bytes:
    prefix = _last_key_block[0]
    if not (key.startswith(prefix) and key.endswith(b"}")):
        block = _schema_block(key)
        if block is None:
            row = _key_row(key, None)
            return key if row is None else _canonical_key(row, key)
        prefix = _last_key_block[0] = _SCHEMA_AT + block + _PAYLOAD_AT
    try:
        columns = json_object(key[len(prefix):-1], "record key")
    except Invalid:
        return key
    return _canonical_key(columns, key)


def _canonical_key(row: dict[str, Any], key: bytes) -> bytes:
    try:
        return canonical_json(row, "record key").encode()
    except Invalid:
        return key


class RememberedRows:
    """A `RowMemory` in a dictionary, for a pass over a bounded set of records (`rekey translate`): by topic and
    `row_key`."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, bytes], RowIds] = {}

    def ids_of(self, record: SourceRecord) -> RowIds | None:
        return self.ids.get((record.topic, row_key(record.key))) if record.key else None

    def learn(self, record: SourceRecord, outcome: Outcome) -> None:
        learned = ids_to_remember(record, outcome)
        if learned is not None:
            self.ids[(record.topic, learned[0])] = learned[1]


class ChangeTranslator:
    """`translate` for one Debezium source, compiled once."""

    def __init__(self, declared: DebeziumSource = DEFAULT_SOURCE) -> None:
        self.columns = declared.columns
        org_sources, interaction_sources = declared.id_sources()
        # A column is read from the image the change carries: the `after` or `before` object of the change event,
        # or the record key's columns, put under `key` for it.
        self.ids = {image: (CompiledField(_in_image(org_sources, image)),
                            CompiledField(_in_image(interaction_sources, image)))
                    for image in ("after", "before", "key")}
        self.labels = f"{_labels(org_sources)}, {_labels(interaction_sources)}"
        self.event_time_label = f"after.{self.columns.event_time}"
        self.schema_blocks: dict[bytes, RowTypes] = {}
        self.table_names: dict[tuple[object, object], str] = {}
        self.last_block: tuple[bytes, RowTypes] = (_NO_PREFIX, NO_TYPES)
        """The wrapper's start up to its payload (`{"schema":<block>,"payload":`) of the last block seen."""
        self.time_encodings: dict[RowTypes, TimeEncoding] = {}
        """The event-time column's encoding in the `after` image, by the row types it was named in."""
        self.plain_id_columns = (_plain_column(org_sources), _plain_column(interaction_sources))
        org_column, interaction_column = self.plain_id_columns
        self.plain_ids = None if org_column is None or interaction_column is None else (org_column,
                                                                                        interaction_column)
        """The id columns when both ids are taken as they are from a column (None: a declared source does more)."""

    def __call__(self, record: SourceRecord, avro: AvroValues | None = None, rows: RowMemory | None = None) -> Outcome:
        """`avro`: reads values and keys of the Avro converter (without it they are poison pills); `rows`: the
        ids of rows seen earlier, for deletes that do not carry them."""
        value = record.value
        if value is None:
            return Skip(SkipReason.TOMBSTONE, "tombstone (null value) following a delete")
        prefix, typing = self.last_block
        plain_ids = self.plain_ids
        if plain_ids is not None and value.startswith(prefix) and value.endswith(b"}"):
            changed = self._changed_row(record, value[len(prefix):-1], typing, plain_ids)
            if changed is not None:
                return changed
        decoded = self._decoded(value, avro)
        if isinstance(decoded, Skip):
            return decoded
        change, typing, rows_in = decoded
        op = change.get("op")
        if op is None:
            skip = _marker(change)
            if skip is not None:
                return skip
        if op == "t":
            return Skip(SkipReason.TRUNCATE, "truncate of the table")
        if op == "m":
            return Skip(SkipReason.MESSAGE, "logical decoding message (names no row)")
        if not isinstance(op, str) or op not in EVENT_TYPES:
            fail(PoisonReason.SCHEMA_INVALID, f"op {str(op)[:16]!r} is not one of c, u, d, r, t", "op")
        source = change.get("source")
        if source.__class__ is not dict:
            source = _object(change, "source")
        if op == "d":
            image, row, (org_id, interaction_id) = self._deleted(change, record, avro, rows)
            event_time_ms = long_value(_commit_ms(change, source), "source.ts_ms", PoisonReason.BAD_TIMESTAMP)
        else:
            image, after = "after", change.get("after")
            row = after if after.__class__ is dict else _object(change, "after")
            org_id, interaction_id = self._row_ids(row, change, record)
            event_time_ms = self._event_time(row, typing)
        lsn = source.get("lsn")
        if lsn.__class__ is int and 0 <= lsn <= LONG_MAX:  # PostgreSQL, the common case, at once
            ordering_token, position = lsn, f"lsn={lsn}"
        else:
            ordering_token, position = _position(source, _commit_ms(change, source))
        table = self.table_names.get((source.get("schema"), source.get("table")))
        if table is None:
            if not source.get("table"):
                fail(PoisonReason.SCHEMA_INVALID, "source.table is missing", "source.table")
            table = self._table_name(source.get("schema"), source["table"])
        return self._draft(record, op, image, row, (org_id, interaction_id), event_time_ms, ordering_token,
                           position, table, typing, rows_in)

    def _changed_row(self, record: SourceRecord, payload: bytes, typing: RowTypes,
                     plain_ids: tuple[str, str]) -> Outcome | None:
        """A change of a row's `after` image (op c, u or r) in the JSON converter's wrapper with the last schema
        block seen, carrying an LSN, plain ids and a table named before: decoded into the fields it reads (the
        `before` image, the `source` block's other fields and the envelope's times are skipped undecoded).
        None: another case, which `__call__` translates from the change decoded whole (an ASCII payload decodes
        the same either way)."""
        if not payload.isascii():
            return None
        try:
            change = _decode_row_change(payload)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return None
        op, row, source = change.op, change.after, change.source
        if op.__class__ is not str or op not in _ROW_CHANGE_OPS or row.__class__ is not dict or source is None:
            return None
        lsn = source.lsn
        table = self.table_names.get((source.schema, source.table))
        if lsn.__class__ is not int or not 0 <= lsn <= LONG_MAX or table is None:
            return None
        org_column, interaction_column = plain_ids
        org_id, interaction_id = row.get(org_column), row.get(interaction_column)
        if not (_plain_id(org_id) and _plain_id(interaction_id)):
            return None
        return self._draft(record, op, "after", row, (org_id, interaction_id), self._event_time(row, typing), lsn,
                           f"lsn={lsn}", table, typing, payload)

    def _draft(self, record: SourceRecord, op: str, image: str, row: dict[str, Any], ids: RowIds,
               event_time_ms: int, ordering_token: int, position: str, table: str, typing: RowTypes,
               rows_in: bytes) -> DomainEventDraft:
        """The draft of a change of `row`, read from `image` of the change event whose rows are in `rows_in`."""
        org_id, interaction_id = ids
        event_id = cdc_event_id(table, position, op, org_id, interaction_id)
        interaction_type = self.columns.interaction_type
        if interaction_type is not None:
            interaction_type = row.get(interaction_type)
            if interaction_type is not None and not (interaction_type.__class__ is str and interaction_type.isascii()):
                interaction_type = text(interaction_type, f"{image}.{self.columns.interaction_type}")
        converters = typing.converters_of(image)
        unavailable = may_hold_unavailable(rows_in)
        return DomainEventDraft(
            org_id=org_id,
            interaction_id=interaction_id,
            event_id=event_id,
            event_type=EVENT_TYPES[op],
            interaction_type=interaction_type,
            event_time_ms=event_time_ms,
            source=SourcePosition(record.topic, record.partition, record.offset),
            ordering_token=ordering_token,
            change_op=op,
            payload=canonical_json(plain_row(row, converters, unavailable) if converters or unavailable else row,
                                   image),
            dedupe_id=event_id,
        )

    def _row_ids(self, row: dict[str, Any], change: dict[str, Any], record: SourceRecord) -> RowIds:
        """The ids of a change of `row` (its `after` image): a declared plain column's ASCII text at once, else
        as the declared sources say."""
        org_column, interaction_column = self.plain_id_columns
        org_id = None if org_column is None else row.get(org_column)
        if not _plain_id(org_id):
            org_id = self.ids["after"][0].text(change, record, PoisonReason.MISSING_ORG_ID)
        interaction_id = None if interaction_column is None else row.get(interaction_column)
        if not _plain_id(interaction_id):
            interaction_id = self.ids["after"][1].text(change, record, PoisonReason.MISSING_INTERACTION_ID)
        return org_id, interaction_id

    def _table_name(self, schema: object, name: object) -> str:
        """`schema.table` (or `table` without a schema), checked once per pair seen."""
        named = (schema is None or schema.__class__ is str) and name.__class__ is str  # else `text` fails below
        qualified = self.table_names.get((schema, name)) if named else None
        if qualified is None:
            parts = [text(part, f"source.{label}") for label, part in (("schema", schema), ("table", name)) if part]
            qualified = ".".join(parts)
            if named:
                if len(self.table_names) >= _TABLE_NAMES:
                    self.table_names.clear()
                self.table_names[(schema, name)] = qualified
        return qualified

    def _decoded(self, value: bytes, avro: AvroValues | None) -> tuple[dict[str, Any], RowTypes, bytes] | Skip:
        """The change event, the types of its rows and the bytes its rows are in; the JSON converter's schema block
        is parsed once, and the last one seen is recognised without a copy."""
        prefix, typing = self.last_block
        if not (value.startswith(prefix) and value.endswith(b"}")):
            schema = _schema_block(value)
            if schema is None:
                return self._decoded_otherwise(value, avro)
            prefix, typing = self._remember_block(schema)
        payload = value[len(prefix):-1]
        if payload == b"null":
            return Skip(SkipReason.TOMBSTONE, "null payload in the schema wrapper")
        return json_object(payload, "payload of the schema wrapper"), typing, payload

    def _remember_block(self, schema: bytes) -> tuple[bytes, RowTypes]:
        typing = self.schema_blocks.get(schema)
        if typing is None:
            if len(self.schema_blocks) >= _SCHEMA_BLOCKS:
                self.schema_blocks.clear()
            typing = self.schema_blocks[schema] = RowTypes.of_schema_block(json_object(schema, "schema"))
        self.last_block = (_SCHEMA_AT + schema + _PAYLOAD_AT, typing)
        return self.last_block

    @staticmethod
    def _decoded_otherwise(value: bytes, avro: AvroValues | None) -> tuple[dict[str, Any], RowTypes, bytes] | Skip:
        """A value of the Avro converter, of the JSON converter without schemas, or its wrapper spaced or ordered
        otherwise."""
        change, writer = value_object(value, "change event value", avro)
        if writer is not None:
            return change, writer.row_types, value
        if "payload" in change and "schema" in change:  # the wrapper as another writer spaced or ordered it
            unwrapped = change["payload"]
            if unwrapped is None:
                return Skip(SkipReason.TOMBSTONE, "null payload in the schema wrapper")
            if not isinstance(unwrapped, dict):
                fail(PoisonReason.SCHEMA_INVALID, "payload of the schema wrapper is not an object", "payload")
            return unwrapped, RowTypes.of_schema_block(change["schema"]), value
        return change, NO_TYPES, value

    def _event_time(self, row: dict[str, Any], typing: RowTypes) -> int:
        """The event time of a change of `row`, its `after` image."""
        column = self.columns.event_time
        encoding = self.time_encodings.get(typing)
        if encoding is None:
            if len(self.time_encodings) >= _SCHEMA_BLOCKS:
                self.time_encodings.clear()
            encoding = self.time_encodings[typing] = encoding_of_connect_type(typing.name("after", column))
        return epoch_millis(row.get(column), self.event_time_label, encoding)

    def _ids(self, change: dict[str, Any], record: SourceRecord, image: str) -> RowIds | None:
        org_field, interaction_field = self.ids[image]
        org_id = org_field.optional_text(change, record)
        interaction_id = interaction_field.optional_text(change, record)
        return None if org_id is None or interaction_id is None else (org_id, interaction_id)

    def _deleted(self, change: dict[str, Any], record: SourceRecord, avro: AvroValues | None,
                 rows: RowMemory | None) -> tuple[str, dict[str, Any], RowIds]:
        """The image a delete is read from, the row it names, and its ids: from its `before` image, else its
        record key, else the row's earlier changes."""
        before = change.get("before")
        if before is not None and not isinstance(before, dict):
            fail(PoisonReason.SCHEMA_INVALID, "before is not an object", "before")
        if before is not None and (ids := self._ids(change, record, "before")) is not None:
            return "before", before, ids
        keyed = _key_row(record.key, avro)
        if keyed is not None:
            change["key"] = keyed
            if (ids := self._ids(change, record, "key")) is not None:
                return "key", keyed, ids
        remembered = None if rows is None else rows.ids_of(record)
        if remembered is None:
            key = row_key(record.key or b"").decode("utf-8", "replace")[:96]
            fail(PoisonReason.UNKNOWN_ROW, f"delete of row {key!r}: its before image and key lack the ids "
                                           f"({self.labels}) and no earlier change of the row was seen", "before")
        # The before image's columns other than the key's are null or their defaults, not the row's values.
        return ("key", keyed, remembered) if keyed is not None else ("before", before or {}, remembered)


def _in_image(sources: Sources, image: str) -> Sources:
    """`sources` with each `column` read from `image` of the change event."""
    return tuple(FieldSource.model_validate({**source.model_dump(exclude_defaults=True), "column": None,
                                             "path": f"{image}.{source.column}"})
                 if source.column is not None else source for source in sources)


def _plain_column(sources: Sources) -> str | None:
    """The column the first of `sources` reads when it takes the value as it is (None: it does something else)."""
    first = sources[0] if sources else None
    if first is None or first.column is None or first.pattern is not None or first.split is not None or \
            first.ids == "template" or first.lowercase:
        return None
    return first.column


def _plain_id(value: Any) -> TypeGuard[str]:
    """Whether a column's value is an id as it is: non-blank ASCII text."""
    return value.__class__ is str and value.isascii() and value != "" and not value.isspace()


def _labels(sources: Sources) -> str:
    return " or ".join(source.label for source in sources)


def _schema_block(value: bytes) -> bytes | None:
    """The schema block of the JSON converter's wrapper as Kafka Connect writes it (`{"schema":...,"payload":...}`,
    compact, in that order: a Connect schema has no `payload` key), without decoding it."""
    if not value.startswith(_SCHEMA_AT) or not value.endswith(b"}"):
        return None
    cut = value.find(_PAYLOAD_AT)
    return None if cut < 0 else value[len(_SCHEMA_AT):cut]


def _marker(change: dict[str, Any]) -> Skip | None:
    """A record without an op that names no row: a transaction BEGIN/END or a heartbeat (None: neither)."""
    if change.get("status") in ("BEGIN", "END"):
        return Skip(SkipReason.TRANSACTION, f"transaction {change['status']} record")
    if "ts_ms" in change and "source" not in change and "after" not in change and "before" not in change:
        return Skip(SkipReason.HEARTBEAT, "connector heartbeat")
    return None


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

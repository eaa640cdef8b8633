"""Debezium change events of the `interactions` table: ops, both envelopes, tombstones, positions, pills."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafka_rekey.shared.translation import (
    DomainEventDraft,
    PoisonPill,
    PoisonReason,
    RememberedRows,
    Skip,
    SkipReason,
    SourceRecord,
    row_key,
    translate,
)
from kafka_rekey.shared.translation.debezium import DebeziumColumns, DebeziumSource, ids_to_remember
from kafka_rekey.shared.translation.mapping import MappingOverrides

ROW = {
    "org_id": "org-7",
    "interaction_id": "int-42",
    "status": "active",
    "interaction_type": "chat",
    "agent_id": "a-9",
    "queue_id": "q-1",
    "updated_at": "2023-10-27T14:30:00.250000Z",
}
SOURCE = {"connector": "postgresql", "db": "cc", "schema": "public", "table": "interactions",
          "lsn": 24023128, "ts_ms": 1698417001000, "txId": 771}


def change(op: str, before: dict[str, Any] | None = None, after: dict[str, Any] | None = None,
           source: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"before": before, "after": after, "source": source or SOURCE, "op": op, "ts_ms": 1698417001500}


def run(value: dict[str, Any] | None, offset: int = 9) -> DomainEventDraft | Skip | PoisonPill:
    data = None if value is None else json.dumps(value).encode()
    return translate(SourceRecord("cdc.public.interactions", 1, offset, b'{"id": 1}', data), "debezium")


def test_an_update_uses_the_after_image() -> None:
    draft = run(change("u", before=dict(ROW, status="queued"), after=ROW))
    assert isinstance(draft, DomainEventDraft)
    assert (draft.org_id, draft.interaction_id, draft.event_type, draft.change_op) == ("org-7", "int-42",
                                                                                        "updated", "u")
    assert draft.interaction_type == "chat"
    assert draft.event_time_ms == 1698417000250
    assert draft.ordering_token == 24023128
    assert draft.event_id == draft.dedupe_id == "public.interactions:lsn=24023128:u:org-7:int-42"
    assert json.loads(draft.payload) == ROW


@pytest.mark.parametrize(("op", "event_type"), [("c", "created"), ("r", "snapshot")])
def test_creates_and_snapshot_reads(op: str, event_type: str) -> None:
    draft = run(change(op, after=ROW))
    assert isinstance(draft, DomainEventDraft) and draft.event_type == event_type


def test_a_delete_uses_the_before_image_and_the_commit_time() -> None:
    draft = run(change("d", before={"org_id": "org-7", "interaction_id": "int-42"}))
    assert isinstance(draft, DomainEventDraft)
    assert (draft.event_type, draft.event_time_ms, draft.interaction_type) == ("deleted", 1698417001000, None)


def test_the_schema_wrapper_gives_the_same_draft_as_the_plain_payload() -> None:
    plain = change("u", after=ROW)
    assert run({"schema": {"type": "struct", "name": "cdc.public.interactions.Envelope"}, "payload": plain}) == run(
        plain)


def test_a_redelivered_change_has_the_same_dedupe_id_from_another_offset() -> None:
    first, again = run(change("u", after=ROW), offset=9), run(change("u", after=ROW), offset=5000)
    assert isinstance(first, DomainEventDraft) and isinstance(again, DomainEventDraft)
    assert first.dedupe_id == again.dedupe_id and first.source != again.source


def test_snapshot_rows_sharing_one_lsn_do_not_collide() -> None:
    one = run(change("r", after=ROW))
    other = run(change("r", after=dict(ROW, interaction_id="int-43")))
    assert isinstance(one, DomainEventDraft) and isinstance(other, DomainEventDraft)
    assert one.dedupe_id != other.dedupe_id


def test_without_an_lsn_the_commit_time_orders_and_dedupes() -> None:
    source = {k: v for k, v in SOURCE.items() if k != "lsn"}
    draft = run(change("u", after=ROW, source=source))
    assert isinstance(draft, DomainEventDraft)
    assert draft.ordering_token == 1698417001000
    assert draft.dedupe_id == "public.interactions:ts=1698417001000:u:org-7:int-42"


def test_integer_ids_are_rendered_in_decimal() -> None:
    draft = run(change("c", after=dict(ROW, org_id=17, interaction_id=12345678901234)))
    assert isinstance(draft, DomainEventDraft) and (draft.org_id, draft.interaction_id) == ("17", "12345678901234")


@pytest.mark.parametrize("value", [None, {"schema": {"type": "struct"}, "payload": None}])
def test_tombstones_are_skipped(value: dict[str, Any] | None) -> None:
    outcome = run(value)
    assert isinstance(outcome, Skip) and outcome.reason == SkipReason.TOMBSTONE


def test_truncates_are_skipped() -> None:
    outcome = run({"op": "t", "source": SOURCE, "before": None, "after": None})
    assert isinstance(outcome, Skip) and outcome.reason == SkipReason.TRUNCATE


@pytest.mark.parametrize(("value", "reason", "field"), [
    (change("x", after=ROW), PoisonReason.SCHEMA_INVALID, "op"),
    ({"after": ROW, "source": SOURCE}, PoisonReason.SCHEMA_INVALID, "op"),
    (change("u", after=None), PoisonReason.SCHEMA_INVALID, "after"),
    (change("d", after=ROW), PoisonReason.UNKNOWN_ROW, "before"),  # the key {"id": 1} names no ids, none seen
    ({"op": "u", "after": ROW}, PoisonReason.SCHEMA_INVALID, "source"),
    ({"schema": {}, "payload": [1]}, PoisonReason.SCHEMA_INVALID, "payload"),
    (change("u", after=dict(ROW, org_id=None)), PoisonReason.MISSING_ORG_ID, "after.org_id"),
    (change("d", before={"interaction_id": "int-42"}), PoisonReason.UNKNOWN_ROW, "before"),
    (change("c", after=dict(ROW, interaction_id="")), PoisonReason.MISSING_INTERACTION_ID, "after.interaction_id"),
    (change("c", after=dict(ROW, org_id=True)), PoisonReason.SCHEMA_INVALID, "after.org_id"),
    (change("u", after=dict(ROW, updated_at="27/10/2023")), PoisonReason.BAD_TIMESTAMP, "after.updated_at"),
    (change("u", after=dict(ROW, updated_at=True)), PoisonReason.BAD_TIMESTAMP, "after.updated_at"),
    (change("u", after=dict(ROW, updated_at="2023-10-27T14:30:00")), PoisonReason.BAD_TIMESTAMP, "after.updated_at"),
    (change("u", after={k: v for k, v in ROW.items() if k != "updated_at"}), PoisonReason.BAD_TIMESTAMP,
     "after.updated_at"),
    ({"op": "d", "before": ROW, "source": {"table": "interactions", "lsn": 5}}, PoisonReason.BAD_TIMESTAMP,
     "source.ts_ms"),
    ({"op": "u", "after": ROW, "source": {"table": "interactions"}}, PoisonReason.SCHEMA_INVALID, "source.lsn"),
    (change("u", after=ROW, source={"table": "interactions", "lsn": -5}), PoisonReason.SCHEMA_INVALID,
     "source.lsn"),
    (change("u", after=ROW, source={"table": "interactions", "lsn": 2**64}), PoisonReason.SCHEMA_INVALID,
     "source.lsn"),
    (change("u", after=ROW, source={"lsn": 5}), PoisonReason.SCHEMA_INVALID, "source.table"),
])
def test_invalid_changes_name_reason_and_field(value: dict[str, Any], reason: PoisonReason, field: str) -> None:
    outcome = run(value)
    assert isinstance(outcome, PoisonPill), outcome
    assert (outcome.reason_code, outcome.field) == (reason, field)
    assert field in outcome.message


def _wrapped(value: dict[str, Any], updated_at_type: str | None) -> dict[str, Any]:
    """The JSON converter's envelope with a schema block naming `updated_at`'s semantic type."""
    column = {"type": "int64" if updated_at_type != "io.debezium.time.ZonedTimestamp" else "string",
              "optional": True, "field": "updated_at"}
    if updated_at_type:
        column["name"] = updated_at_type
    row = {"type": "struct", "optional": True, "fields": [{"type": "string", "field": "org_id"}, column]}
    return {"schema": {"type": "struct", "fields": [dict(row, field="before"), dict(row, field="after"),
                                                     {"type": "struct", "field": "source"}]},
            "payload": value}


@pytest.mark.parametrize(("updated_at", "semantic_type"), [
    ("2023-10-27T14:30:00.250000Z", "io.debezium.time.ZonedTimestamp"),
    ("2023-10-27T16:30:00.250123456+02:00", None),
    (1698417000250, "io.debezium.time.Timestamp"),
    (1698417000250999, "io.debezium.time.MicroTimestamp"),
    (1698417000250999999, "io.debezium.time.NanoTimestamp"),
    (1698417000250, "org.apache.kafka.connect.data.Timestamp"),
    (1698417000250, None),
    (1698417000250999, None),
    ("1698417000250", None),
])
def test_every_debezium_time_encoding_reads_the_same_instant(updated_at: object, semantic_type: str | None) -> None:
    draft = run(_wrapped(change("u", after=dict(ROW, updated_at=updated_at)), semantic_type))
    assert isinstance(draft, DomainEventDraft), draft
    assert draft.event_time_ms == 1698417000250


def test_the_schema_block_decides_the_unit_the_magnitude_cannot() -> None:
    # 1,000,000 as microseconds is one second after the epoch; by magnitude alone it would be read as seconds.
    draft = run(_wrapped(change("u", after=dict(ROW, updated_at=1_000_000)), "io.debezium.time.MicroTimestamp"))
    assert isinstance(draft, DomainEventDraft) and draft.event_time_ms == 1000


def test_a_delete_without_a_source_commit_time_takes_the_envelopes() -> None:
    draft = run(change("d", before=ROW, source=dict(SOURCE, ts_ms=0)))
    assert isinstance(draft, DomainEventDraft) and draft.event_time_ms == 1698417001500


@pytest.mark.parametrize(("value", "reason"), [
    ({"op": "m", "source": SOURCE, "message": {"prefix": "audit", "content": "aGk="}}, SkipReason.MESSAGE),
    ({"status": "BEGIN", "id": "571:53195829", "event_count": None, "data_collections": None},
     SkipReason.TRANSACTION),
    ({"status": "END", "id": "571:53195832", "event_count": 2,
      "data_collections": [{"data_collection": "public.interactions", "event_count": 2}]}, SkipReason.TRANSACTION),
])
def test_messages_and_transaction_markers_are_counted_skips(value: dict[str, Any], reason: SkipReason) -> None:
    outcome = run(value)
    assert isinstance(outcome, Skip) and outcome.reason == reason


def _keyed(value: dict[str, Any], key: object) -> DomainEventDraft | Skip | PoisonPill:
    return translate(SourceRecord("cdc.public.interactions", 1, 9, json.dumps(key).encode(),
                                  json.dumps(value).encode()), "debezium")


@pytest.mark.parametrize("key", [
    {"org_id": "org-7", "interaction_id": "int-42"},
    {"schema": {"type": "struct"}, "payload": {"org_id": "org-7", "interaction_id": "int-42"}},
])
def test_a_delete_without_the_ids_in_before_takes_them_from_the_key(key: dict[str, Any]) -> None:
    for before in (None, {"id": 5}):
        draft = _keyed(change("d", before=before), key)
        assert isinstance(draft, DomainEventDraft), draft
        assert (draft.org_id, draft.interaction_id, draft.event_type) == ("org-7", "int-42", "deleted")
        assert draft.event_id == "public.interactions:lsn=24023128:d:org-7:int-42"


def test_mysql_changes_dedupe_by_binlog_position() -> None:
    mysql = {"connector": "mysql", "db": "cc", "table": "interactions", "file": "mysql-bin.000003", "pos": 154,
             "row": 2, "ts_ms": 1698417001000, "gtid": None}
    draft = run(change("u", after=ROW, source=mysql))
    assert isinstance(draft, DomainEventDraft)
    assert draft.event_id == "interactions:binlog=mysql-bin.000003:154:2:u:org-7:int-42"
    later = run(change("u", after=ROW, source=dict(mysql, file="mysql-bin.000004", pos=4)))
    assert isinstance(later, DomainEventDraft) and later.ordering_token > draft.ordering_token


COLUMNS = DebeziumSource(columns=DebeziumColumns(org_id="tenant_id", interaction_id="conversation_id",
                                                event_time="modified_at", interaction_type=None))
RENAMED = {"tenant_id": 17, "conversation_id": "conv-3", "modified_at": 1698417000250999, "channel": "voice"}


def test_declared_columns_name_the_ids_and_the_event_time() -> None:
    draft = translate(SourceRecord("cdc.crm.conversations", 0, 4, None, json.dumps(change("c", after=RENAMED))
                                   .encode()), COLUMNS)
    assert isinstance(draft, DomainEventDraft), draft
    assert (draft.org_id, draft.interaction_id, draft.event_time_ms, draft.interaction_type) == (
        "17", "conv-3", 1698417000250, None)


def test_a_delete_with_declared_columns_takes_the_ids_from_the_key() -> None:
    key = json.dumps({"tenant_id": 17, "conversation_id": "conv-3"}).encode()
    deleted = json.dumps(change("d", before=None)).encode()
    draft = translate(SourceRecord("cdc.crm.conversations", 0, 5, key, deleted), COLUMNS)
    assert isinstance(draft, DomainEventDraft) and (draft.org_id, draft.interaction_id) == ("17", "conv-3")
    missing = translate(SourceRecord("t", 0, 6, None, json.dumps(change("c", after=ROW)).encode()), COLUMNS)
    assert isinstance(missing, PoisonPill) and missing.field == "after.tenant_id"


class Rows:
    """A `RowMemory` of the rows a test names."""

    def __init__(self, known: dict[bytes, tuple[str, str]]) -> None:
        self.known = known

    def ids_of(self, record: SourceRecord) -> tuple[str, str] | None:
        return self.known.get(record.key or b"")


def test_a_delete_with_only_the_primary_key_takes_the_ids_of_the_rows_earlier_changes() -> None:
    """Replica identity DEFAULT on a surrogate key: `before` is `{"id": 1}` and so is the record key."""
    record = SourceRecord("cdc.public.interactions", 1, 12, b'{"id": 1}',
                          json.dumps(change("d", before={"id": 1})).encode())
    draft = translate(record, "debezium", rows=Rows({b'{"id": 1}': ("org-7", "int-42")}))
    assert isinstance(draft, DomainEventDraft)
    assert (draft.org_id, draft.interaction_id, draft.event_type) == ("org-7", "int-42", "deleted")
    assert json.loads(draft.payload) == {"id": 1}
    pill = translate(record, "debezium", rows=Rows({}))
    assert isinstance(pill, PoisonPill) and pill.reason_code is PoisonReason.UNKNOWN_ROW
    assert "delete of row '{\"id\":1}'" in pill.message


def _schema_key(row_id: int, id_type: str) -> bytes:
    """The record key of the JSON converter with schemas, as Debezium writes it for a surrogate `id` key."""
    return json.dumps({"schema": {"type": "struct", "optional": False, "name": "cdc.public.interactions.Key",
                                  "fields": [{"type": id_type, "optional": False, "default": 0, "field": "id"}]},
                       "payload": {"id": row_id}}).encode()


def test_a_delete_carrying_only_the_primary_key_has_the_keys_columns_as_payload() -> None:
    """What Debezium 3.6 writes under the default replica identity: every column of the before image, those
    PostgreSQL did not send null or the column's default ('voice')."""
    before = {"id": 2, **dict.fromkeys(ROW, None), "channel": "voice"}
    record = SourceRecord("cdc.public.interactions", 1, 12, _schema_key(2, "int32"),
                          json.dumps(change("d", before=before)).encode())
    draft = translate(record, "debezium", rows=Rows({record.key or b"": ("org-7", "int-42")}))
    assert isinstance(draft, DomainEventDraft) and (draft.org_id, draft.interaction_id) == ("org-7", "int-42")
    assert json.loads(draft.payload) == {"id": 2}
    pill = translate(record, "debezium", rows=Rows({}))
    assert isinstance(pill, PoisonPill) and "delete of row '{\"id\":2}'" in pill.message  # not its schema block


def test_the_row_memory_knows_a_row_by_its_keys_columns_whatever_schema_the_key_carries() -> None:
    """`ALTER COLUMN id TYPE bigint` changes the schema block in every key the JSON converter writes; so does
    turning `key.converter.schemas.enable` off."""
    rows = RememberedRows()
    created = SourceRecord("cdc.public.interactions", 1, 3, _schema_key(5, "int32"),
                           json.dumps(change("c", after=ROW)).encode())
    rows.learn(created, translate(created, "debezium", rows=rows))
    for key in (_schema_key(5, "int64"), b'{"id": 5}', b'{"id":5}'):
        deleted = SourceRecord("cdc.public.interactions", 2, 7, key,
                               json.dumps(change("d", before={"id": 5, "org_id": None})).encode())
        draft = translate(deleted, "debezium", rows=rows)
        assert isinstance(draft, DomainEventDraft) and (draft.org_id, draft.interaction_id) == ("org-7", "int-42")
    other = SourceRecord("cdc.public.interactions", 1, 8, _schema_key(6, "int64"),
                         json.dumps(change("d", before={"id": 6})).encode())
    assert isinstance(translate(other, "debezium", rows=rows), PoisonPill)
    assert row_key(b"\x00\x00\x00\x00\x07\x0a") == b"\x00\x00\x00\x00\x07\x0a"  # Avro: the bytes as they are


def test_a_translated_change_teaches_the_row_memory_its_ids() -> None:
    record = SourceRecord("cdc.public.interactions", 1, 3, b'{"id": 1}', json.dumps(change("u", after=ROW)).encode())
    assert ids_to_remember(record, translate(record, "debezium")) == (b'{"id":1}', ("org-7", "int-42"))
    wrapped = {"schema": {"type": "struct", "fields": [{"type": "int64", "field": "id"}]}, "payload": {"id": 1}}
    for key in (json.dumps(wrapped, separators=(",", ":")).encode(), json.dumps(wrapped).encode()):
        assert row_key(key) == b'{"id":1}'  # the key's columns, whatever its schema block (a retyped key's differs)
    retyped = json.dumps({**wrapped, "schema": {"type": "struct", "fields": [{"type": "int32", "field": "id"}]}},
                         separators=(",", ":")).encode()
    assert row_key(retyped) == b'{"id":1}'
    assert row_key(b"\x00\x00\x00\x00\x07\x02") == b"\x00\x00\x00\x00\x07\x02"  # Avro: the bytes as they are
    tombstone = SourceRecord("cdc.public.interactions", 1, 4, b'{"id": 1}', None)
    assert ids_to_remember(tombstone, translate(tombstone, "debezium")) is None


@pytest.mark.parametrize("value", [
    {"ts_ms": 1698417001000},
    {"schema": {"type": "struct", "name": "io.debezium.connector.common.Heartbeat"}, "payload": {"ts_ms": 1}},
])
def test_a_connector_heartbeat_is_a_counted_skip(value: dict[str, Any]) -> None:
    skip = translate(SourceRecord("__debezium-heartbeat.crm", 0, 1, b'{"serverName": "crm"}',
                                  json.dumps(value).encode()), "debezium")
    assert isinstance(skip, Skip) and skip.reason is SkipReason.HEARTBEAT


TENANT_ROW = {"id": 5, "interaction_id": "int-9", "status": "active", "updated_at": "2023-10-27T14:30:00Z"}


@pytest.mark.parametrize(("mapping", "topic", "source", "org"), [
    ({"org_id": [{"path": "source.schema", "pattern": "^tenant_(.+)$"}]}, "crm.tenant_a.interactions",
     {"schema": "tenant_a"}, "a"),
    ({"org_id": {"path": "source.db"}}, "crm_b.public.interactions", {"db": "crm_b"}, "crm_b"),
    ({"org_id": {"topic": True, "split": ".", "segment": 0}}, "acme.public.interactions", {}, "acme"),
    ({"org_id": [{"column": "tenant"}, {"constant": "org-default"}]}, "crm.public.interactions", {},
     "org-default"),
])
def test_the_org_comes_from_where_a_multi_tenant_layout_keeps_it(mapping: dict[str, Any], topic: str,
                                                                  source: dict[str, Any], org: str) -> None:
    declared = DebeziumSource(**MappingOverrides.model_validate(mapping).model_dump(exclude_none=True))
    value = change("u", after=TENANT_ROW, source=dict(SOURCE, **source))
    draft = translate(SourceRecord(topic, 0, 1, b'{"id": 5}', json.dumps(value).encode()), declared)
    assert isinstance(draft, DomainEventDraft), draft
    assert (draft.org_id, draft.interaction_id) == (org, "int-9")
    deleted = change("d", before={"id": 5}, source=dict(SOURCE, **source))
    draft = translate(SourceRecord(topic, 0, 2, b'{"id": 5}', json.dumps(deleted).encode()), declared,
                      rows=Rows({b'{"id": 5}': (org, "int-9")}))
    assert isinstance(draft, DomainEventDraft) and (draft.org_id, draft.interaction_id) == (org, "int-9")


@pytest.mark.parametrize(("org_id", "tenant", "org"), [
    ({"column": "tenant", "lowercase": True}, "ACME", "acme"),
    ([{"column": "tenant"}, {"constant": "org-default"}], "   ", "org-default"),
    ({"column": "tenant"}, "Örg-ß", "Örg-ß"),
    ({"column": "tenant"}, 42, "42"),
    ({"column": "tenant", "pattern": "^t-(.+)$"}, "t-7", "7"),
])
def test_a_column_id_taken_at_once_only_when_the_column_holds_it_as_it_is(org_id: Any, tenant: object,
                                                                         org: str) -> None:
    declared = DebeziumSource(**MappingOverrides.model_validate({"org_id": org_id}).model_dump(exclude_none=True))
    value = change("u", after=dict(TENANT_ROW, tenant=tenant))
    draft = translate(SourceRecord("crm.public.interactions", 0, 1, b'{"id": 5}', json.dumps(value).encode()),
                      declared)
    assert isinstance(draft, DomainEventDraft), draft
    assert draft.org_id == org


def test_a_blank_id_column_without_a_fallback_is_missing() -> None:
    declared = DebeziumSource(**MappingOverrides.model_validate({"org_id": {"column": "tenant"}}).model_dump(
        exclude_none=True))
    value = change("u", after=dict(TENANT_ROW, tenant=" "))
    pill = translate(SourceRecord("crm.public.interactions", 0, 1, b'{"id": 5}', json.dumps(value).encode()),
                     declared)
    assert isinstance(pill, PoisonPill) and pill.reason_code == PoisonReason.MISSING_ORG_ID


def _compact(value: dict[str, Any]) -> bytes:
    """As Kafka Connect's JSON converter writes it: compact, the schema block first."""
    return json.dumps(value, separators=(",", ":")).encode()


def _amount_schema(scale: str) -> dict[str, Any]:
    row = {"type": "struct", "fields": [{"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                                         "parameters": {"scale": scale}, "field": "amount"}]}
    return {"type": "struct", "fields": [{**row, "field": "before"}, {**row, "field": "after"}]}


def test_each_schema_block_the_connector_writes_decides_its_own_records() -> None:
    """The compact wrapper is read without decoding its schema block again, until the block changes."""
    translator = DebeziumSource(columns=DebeziumColumns(interaction_type=None))
    row = dict(ROW, amount="BOI=")  # unscaled 1250
    drafts = []
    for offset, scale in enumerate(["2", "2", "3", "2"]):
        value = {"schema": _amount_schema(scale), "payload": change("u", after=row)}
        drafts.append(translate(SourceRecord("cdc.public.interactions", 0, offset, b'{"id": 1}', _compact(value)),
                                translator))
    assert [json.loads(d.payload)["amount"] for d in drafts if isinstance(d, DomainEventDraft)] == [
        "12.50", "12.50", "1.250", "12.50"]
    spaced = translate(SourceRecord("cdc.public.interactions", 0, 0, b'{"id": 1}',
                                    json.dumps({"schema": _amount_schema("2"), "payload": change("u", after=row)})
                                    .encode()), translator)
    assert spaced == drafts[0]
    tombstone = translate(SourceRecord("cdc.public.interactions", 0, 9, b'{"id": 1}',
                                       _compact({"schema": _amount_schema("2"), "payload": None})), translator)
    assert isinstance(tombstone, Skip) and tombstone.reason is SkipReason.TOMBSTONE


_PLAIN_BLOCK = {"type": "struct", "fields": [{"type": "struct", "field": "after",
                                              "fields": [{"type": "string", "field": "org_id"}]}]}


@pytest.mark.parametrize("payload", [
    _compact(change("c", after=ROW)),
    _compact(change("r", after=dict(ROW, interaction_type=None))),
    _compact(change("u", before=ROW, after=dict(ROW, status="wrap-up", notes="__debezium_unavailable_value"))),
    _compact(change("u", after=dict(ROW, status="Örg-ß"))),
    _compact(change("u", after=ROW, source={"table": "interactions", "ts_ms": 1698417001000})),
    _compact(change("u", after=ROW, source=dict(SOURCE, schema=5))),
    _compact(change("u", after=ROW, source=dict(SOURCE, table="other"))),
    _compact(change("u", after=dict(ROW, org_id=" "))),
    _compact(change("u", after=dict(ROW, updated_at="27/10/2023"))),
    _compact({"op": "u", "after": ROW, "source": "public.interactions"}),
    _compact(change("d", before=ROW)),
    _compact(change("u", after=ROW)).replace(b'"postgresql"', b'"postgr\xe9sql"'),  # not UTF-8
    _compact(change("u", after=ROW)).replace(b'"txId":771', b'"txId":7e999'),
])
def test_a_change_in_the_connectors_compact_wrapper_translates_as_its_plain_payload(payload: bytes) -> None:
    """The wrapper with a schema block seen before is read decoding only the fields a row change needs: whatever
    the change holds, the outcome is that of the change decoded whole."""
    block = _compact(_PLAIN_BLOCK)

    def wrapped(offset: int, body: bytes) -> DomainEventDraft | Skip | PoisonPill:
        record = SourceRecord("cdc.public.interactions", 0, offset, b'{"id": 1}',
                              b'{"schema":' + block + b',"payload":' + body + b"}")
        return translate(record, "debezium")

    wrapped(1, _compact(change("u", after=ROW)))  # the block is seen
    plain = translate(SourceRecord("cdc.public.interactions", 0, 2, b'{"id": 1}', payload), "debezium")
    outcome = wrapped(2, payload)
    if isinstance(plain, PoisonPill):  # its message names the wrapper or the value
        assert isinstance(outcome, PoisonPill) and (outcome.reason_code, outcome.field) == (plain.reason_code,
                                                                                             plain.field)
    else:
        assert outcome == plain

"""Debezium through the Avro converter: framed values and keys, writer schemas by id (looked up once), Connect
time types from the schema, and the same domain events as the JSON converter gives for the same change."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import msgspec
import pytest

from kafka_rekey.shared.avro import frame
from kafka_rekey.shared.translation import (
    AvroValues,
    DomainEventDraft,
    PoisonPill,
    PoisonReason,
    SourceRecord,
    translate,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "sources" / "debezium-avro"
VALUE_SCHEMA = (FIXTURES / "interactions-value.avsc").read_text()
KEY_SCHEMA = (FIXTURES / "interactions-key.avsc").read_text()
VALUE_ID, KEY_ID = 41, 40
UPDATED_AT_US = 1_698_417_000_250_123  # 2023-10-27T14:30:00.250123Z
HANDLE_SECONDS = (1250).to_bytes(2, "big")  # numeric(10,2) 12.50, as the Decimal's unscaled bytes
ROW = {"org_id": "org-7", "interaction_id": "int-42", "status": "active", "interaction_type": "chat",
       "agent_id": "a-9", "queue_id": None, "handle_seconds": HANDLE_SECONDS, "updated_at": UPDATED_AT_US}
SOURCE = {"version": "2.7.0.Final", "connector": "postgresql", "name": "cdc", "ts_ms": 1698417001000,
          "snapshot": "false", "db": "cc", "sequence": '["24023000","24023128"]', "ts_us": None, "ts_ns": None,
          "schema": "public", "table": "interactions", "txId": 771, "lsn": 24023128, "xmin": None}


def change(op: str, before: dict[str, Any] | None = None, after: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"before": before, "after": after, "source": SOURCE, "transaction": None, "op": op,
            "ts_ms": 1698417001500, "ts_us": None, "ts_ns": None}


def avro(schema_text: str, schema_id: int, record: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(json.loads(schema_text)), record)
    return frame(schema_id, body.getvalue())


class Registry:
    """The lookup an `AvroValues` is given: schema text by id, counting the lookups."""

    def __init__(self, schemas: dict[int, str]) -> None:
        self.schemas = schemas
        self.lookups: list[int] = []

    def __call__(self, schema_id: int) -> str | None:
        self.lookups.append(schema_id)
        return self.schemas.get(schema_id)


def run(value: bytes | None, key: bytes | None = None, registry: Registry | None = None,
        ) -> DomainEventDraft | PoisonPill | Any:
    registry = registry or Registry({VALUE_ID: VALUE_SCHEMA, KEY_ID: KEY_SCHEMA})
    return translate(SourceRecord("cdc.public.interactions", 1, 9, key, value), "debezium", AvroValues(registry))


def as_json_converter(value: dict[str, Any]) -> bytes:
    """The same change as the JSON converter (without schemas) writes it: bytes as base64."""
    import base64

    def render(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: render(v) for k, v in item.items()}
        return base64.b64encode(item).decode() if isinstance(item, bytes) else item

    return json.dumps(render(value)).encode()


def test_an_avro_update_is_the_event_the_json_converter_gives() -> None:
    value = change("u", before=dict(ROW, status="queued"), after=ROW)
    draft = run(avro(VALUE_SCHEMA, VALUE_ID, value))
    assert isinstance(draft, DomainEventDraft)
    assert (draft.org_id, draft.interaction_id, draft.event_type) == ("org-7", "int-42", "updated")
    assert draft.event_time_ms == UPDATED_AT_US // 1000  # MicroTimestamp, read from the writer schema
    assert draft.event_id == "public.interactions:lsn=24023128:u:org-7:int-42"
    assert json.loads(draft.payload)["handle_seconds"] == "12.50"  # the decimal, its scale from the writer schema
    # Without a schema block the JSON converter's decimal stays its bytes, base64: all else is the same event.
    without_schema = translate(SourceRecord("cdc.public.interactions", 1, 9, None, as_json_converter(value)),
                               "debezium")
    assert isinstance(without_schema, DomainEventDraft)
    assert json.loads(without_schema.payload)["handle_seconds"] == "BOI="
    assert msgspec.structs.replace(without_schema, payload=draft.payload) == draft


def test_the_writer_schema_decides_a_unit_the_magnitude_cannot() -> None:
    """1970-01-01T00:16:40 in microseconds looks like milliseconds to a guess; the schema says MicroTimestamp."""
    draft = run(avro(VALUE_SCHEMA, VALUE_ID, change("c", after=dict(ROW, updated_at=1_000_000_000))))
    assert isinstance(draft, DomainEventDraft) and draft.event_time_ms == 1_000_000


def test_a_timestamp_millis_logical_type_is_read_as_milliseconds_and_carried_as_iso_8601() -> None:
    connect_mode = VALUE_SCHEMA.replace(
        '"connect.name": "io.debezium.time.MicroTimestamp"',
        '"connect.name": "org.apache.kafka.connect.data.Timestamp", "logicalType": "timestamp-millis"')
    registry = Registry({VALUE_ID: connect_mode})
    draft = run(avro(connect_mode, VALUE_ID, change("c", after=dict(ROW, updated_at=1_698_417_000_250))),
                registry=registry)
    assert isinstance(draft, DomainEventDraft) and draft.event_time_ms == 1_698_417_000_250
    assert json.loads(draft.payload)["updated_at"] == "2023-10-27T14:30:00.250000"


def test_a_delete_without_ids_in_before_takes_them_from_the_avro_key() -> None:
    value = avro(VALUE_SCHEMA, VALUE_ID, change("d"))
    key = avro(KEY_SCHEMA, KEY_ID, {"org_id": "org-7", "interaction_id": "int-42"})
    draft = run(value, key)
    assert isinstance(draft, DomainEventDraft)
    assert (draft.org_id, draft.interaction_id, draft.event_type) == ("org-7", "int-42", "deleted")
    assert draft.event_time_ms == SOURCE["ts_ms"]


def test_each_writer_schema_is_looked_up_once() -> None:
    registry = Registry({VALUE_ID: VALUE_SCHEMA})
    values = AvroValues(registry)
    for offset in range(5):
        record = SourceRecord("cdc.public.interactions", 0, offset, None,
                              avro(VALUE_SCHEMA, VALUE_ID, change("c", after=ROW)))
        assert isinstance(translate(record, "debezium", values), DomainEventDraft)
    assert registry.lookups == [VALUE_ID]


@pytest.mark.parametrize(("value", "registry", "reason", "words"), [
    (avro(VALUE_SCHEMA, 99, change("c", after=ROW)), None, PoisonReason.SCHEMA_INVALID,
     "writer schema id 99: the schema registry does not hold it"),
    (avro(VALUE_SCHEMA, VALUE_ID, change("c", after=ROW))[:-7], None, PoisonReason.UNDECODABLE,
     "is not Avro of writer schema id 41"),
    (avro(VALUE_SCHEMA, 7, change("c", after=ROW)), Registry({7: '{"type": "record"}'}),
     PoisonReason.SCHEMA_INVALID, "writer schema id 7: not an Avro schema"),
])
def test_an_undecodable_avro_value_is_a_poison_pill_saying_why(value: bytes, registry: Registry | None,
                                                                reason: PoisonReason, words: str) -> None:
    pill = run(value, registry=registry)
    assert isinstance(pill, PoisonPill) and pill.reason_code == reason
    assert words in pill.message


def test_an_avro_value_without_a_registry_is_a_poison_pill_naming_the_schema_id() -> None:
    record = SourceRecord("cdc.public.interactions", 0, 3, None, avro(VALUE_SCHEMA, VALUE_ID, change("c", after=ROW)))
    pill = translate(record, "debezium")
    assert isinstance(pill, PoisonPill) and pill.reason_code == PoisonReason.UNDECODABLE
    assert "Confluent wire format (schema id 41), and no schema registry is set" in pill.message

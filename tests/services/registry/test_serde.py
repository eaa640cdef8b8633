"""AvroSerde against the real registry: wire format round trip, schema evolution, fail-loud start-up."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.errors import IncompatibleSchema, RegistryUnavailable
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import RegistrySettings
from kafka_rekey.shared.avro import AvroCodecError, WireFormatError, load_schema, unframe
from kafka_rekey_dev.embedded.processes import free_port

pytestmark = pytest.mark.registry

EVENT: dict[str, Any] = {
    "org_id": "org-7",
    "interaction_id": "int-42",
    "event_id": "3f1c9a",
    "event_type": "answer",
    "interaction_type": "call",
    "event_time": 1698417000000,
    "sequence": 2,
    "source": {"topic": "contact-centre-events", "partition": 3, "offset": 1234},
    "ordering_token": 1698417000000,
    "change_op": None,
    "payload": '{"agentId":"a-9"}',
}


@pytest.fixture
def client(schema_registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient(RegistrySettings(url=schema_registry_url))


@pytest.fixture
def subject() -> str:
    return f"rekey-serde-{uuid.uuid4().hex[:10]}-value"


def evolved(field: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(load_schema("interaction_event"))
    schema["fields"].append(field)
    return schema


def test_round_trip_in_the_confluent_wire_format(client: SchemaRegistryClient, subject: str) -> None:
    serde = AvroSerde(client, subject, load_schema("interaction_event"))
    data = serde.encode(EVENT)
    schema_id, _ = unframe(data)
    assert data[0] == 0 and schema_id == serde.schema_id
    decoded = serde.decode(data)
    assert decoded["event_time"] == datetime(2023, 10, 27, 14, 30, tzinfo=UTC)  # timestamp-millis
    assert {k: v for k, v in decoded.items() if k != "event_time"} == {
        k: v for k, v in EVENT.items() if k != "event_time"
    }


def test_a_fresh_consumer_decodes_by_looking_the_writer_schema_up(client: SchemaRegistryClient, subject: str) -> None:
    data = AvroSerde(client, subject, load_schema("interaction_event")).encode(EVENT)
    consumer_side = AvroSerde(SchemaRegistryClient(RegistrySettings(url=client.url)), subject,
                              load_schema("interaction_event"))
    assert consumer_side.decode(data)["org_id"] == "org-7"


def test_old_data_reads_with_the_new_reader_schema_and_new_data_with_the_old(client: SchemaRegistryClient,
                                                                           subject: str) -> None:
    client.set_compatibility(subject, "FULL")
    v1 = AvroSerde(client, subject, load_schema("interaction_event"))
    old_bytes = v1.encode(EVENT)
    v2 = AvroSerde(client, subject, evolved({"name": "queue_id", "type": ["null", "string"], "default": None}))
    assert v2.schema_id != v1.schema_id

    assert v2.decode(old_bytes)["queue_id"] is None
    new_bytes = v2.encode(dict(EVENT, queue_id="q-support"))
    assert v2.decode(new_bytes)["queue_id"] == "q-support"
    assert "queue_id" not in v1.decode(new_bytes)  # old consumers read new data (FULL)


def test_an_incompatible_schema_fails_the_serde_at_start_up(client: SchemaRegistryClient, subject: str) -> None:
    client.register(subject, load_schema("interaction_event"))
    client.set_compatibility(subject, "BACKWARD")
    with pytest.raises(IncompatibleSchema, match=subject):
        AvroSerde(client, subject, evolved({"name": "queue_id", "type": "string"}))


def test_a_producer_without_a_registry_cannot_be_built(subject: str) -> None:
    url = f"http://127.0.0.1:{free_port(47100)}/apis/ccompat/v7"
    with pytest.raises(RegistryUnavailable, match="unreachable"):
        AvroSerde(SchemaRegistryClient(RegistrySettings(url=url), timeout=2), subject, load_schema("interaction_event"))


def test_invalid_records_and_bytes_are_refused_with_the_field_or_reason(client: SchemaRegistryClient,
                                                                      subject: str) -> None:
    serde = AvroSerde(client, subject, load_schema("interaction_event"))
    with pytest.raises(AvroCodecError, match=r"org_id.*expected string"):
        serde.encode(dict(EVENT, org_id=7))
    with pytest.raises(AvroCodecError, match=subject):
        serde.encode({k: v for k, v in EVENT.items() if k != "payload"})
    with pytest.raises(WireFormatError, match="magic byte"):
        serde.decode(b'{"org_id": "org-7"}')
    with pytest.raises(AvroCodecError, match="schema id"):
        serde.decode(serde.encode(EVENT)[:9])

"""SchemaRegistryClient against the real registry: registration, lookup, enforced compatibility, errors."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.errors import IncompatibleSchema, RegistryUnavailable, SchemaNotFound
from kafka_rekey.services.settings import RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey_dev.embedded.processes import free_port

pytestmark = pytest.mark.registry


@pytest.fixture
def client(schema_registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient(RegistrySettings(url=schema_registry_url))


@pytest.fixture
def subject() -> str:
    return f"rekey-test-{uuid.uuid4().hex[:10]}-value"


def with_field(field: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(load_schema("interaction_event"))
    schema["fields"].append(field)
    return schema


def test_register_is_idempotent_and_the_id_resolves_to_the_schema(client: SchemaRegistryClient, subject: str) -> None:
    schema = load_schema("interaction_event")
    schema_id = client.register(subject, schema)
    again = SchemaRegistryClient(RegistrySettings(url=client.url)).register(subject, schema)
    assert again == schema_id
    fetched = SchemaRegistryClient(RegistrySettings(url=client.url)).schema_by_id(schema_id)
    assert fetched.parsed["name"] == "dev.rekey.domain.InteractionEvent"
    assert [f["name"] for f in fetched.parsed["fields"]] == [f["name"] for f in schema["fields"]]


@pytest.mark.parametrize("level", ["BACKWARD", "FULL"])
def test_a_new_field_without_default_is_rejected_with_the_subject_and_the_registry_message(
    client: SchemaRegistryClient, subject: str, level: str
) -> None:
    client.register(subject, load_schema("interaction_event"))
    client.set_compatibility(subject, level)
    breaking = with_field({"name": "queue_id", "type": "string"})

    assert client.test_compatibility(subject, breaking) is False
    with pytest.raises(IncompatibleSchema) as raised:
        client.register(subject, breaking)
    assert raised.value.status == 409
    assert subject in str(raised.value)
    assert "ncompatible" in str(raised.value)  # the registry's own words


@pytest.mark.parametrize("level", ["BACKWARD", "FULL"])
def test_a_new_field_with_a_default_is_accepted(client: SchemaRegistryClient, subject: str, level: str) -> None:
    first = client.register(subject, load_schema("interaction_event"))
    client.set_compatibility(subject, level)
    evolved = with_field({"name": "queue_id", "type": ["null", "string"], "default": None})

    assert client.test_compatibility(subject, evolved) is True
    second = client.register(subject, evolved)
    assert second != first
    assert client.schema_by_id(second).parsed["fields"][-1]["name"] == "queue_id"


def test_removing_a_field_without_default_breaks_full_but_not_backward(client: SchemaRegistryClient,
                                                                      subject: str) -> None:
    schema = load_schema("interaction_event")
    client.register(subject, schema)
    trimmed = copy.deepcopy(schema)
    trimmed["fields"] = [f for f in trimmed["fields"] if f["name"] != "payload"]
    client.set_compatibility(subject, "FULL")
    assert client.test_compatibility(subject, trimmed) is False
    client.set_compatibility(subject, "BACKWARD")
    assert client.test_compatibility(subject, trimmed) is True


def test_a_subject_without_versions_accepts_any_schema(client: SchemaRegistryClient, subject: str) -> None:
    assert client.test_compatibility(subject, load_schema("interaction_event")) is True


def test_an_unknown_schema_id_names_the_id(client: SchemaRegistryClient) -> None:
    with pytest.raises(SchemaNotFound, match="schema id 987654321"):
        client.schema_by_id(987654321)


def test_an_unknown_compatibility_level_is_refused_before_any_request(client: SchemaRegistryClient,
                                                                      subject: str) -> None:
    with pytest.raises(ValueError, match="SIDEWAYS"):
        client.set_compatibility(subject, "SIDEWAYS")


def test_an_unreachable_registry_fails_loudly_naming_url_and_subject(subject: str) -> None:
    url = f"http://127.0.0.1:{free_port(47000)}/apis/ccompat/v7"
    with pytest.raises(RegistryUnavailable) as raised:
        SchemaRegistryClient(RegistrySettings(url=url), timeout=2).register(subject, load_schema("interaction_event"))
    assert url in str(raised.value)
    assert subject in str(raised.value)

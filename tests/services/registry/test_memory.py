"""Remembered schema ids: valid only for the same registry, subject and schema text; kept in a file written
atomically; used by the client when the registry is unreachable, never for a schema it did not register."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.registry.errors import RegistryUnavailable
from kafka_rekey.services.registry.memory import FILE_NAME, Remembered, SchemaIdMemory, fingerprint, recall, remember
from kafka_rekey.services.registry.serde import AvroSerde
from kafka_rekey.services.settings import RegistrySettings
from kafka_rekey.shared.avro import load_schema, schema_text
from kafka_rekey_dev.embedded.processes import free_port

REGISTRY = "http://registry.example:8081"
TEXT = schema_text(load_schema("interaction_event"))
ENTRIES = [Remembered(REGISTRY, "events_v2-value", fingerprint(TEXT), 7)]


def changed_schema() -> str:
    schema = copy.deepcopy(load_schema("interaction_event"))
    schema["fields"].append({"name": "queue_id", "type": ["null", "string"], "default": None})
    return schema_text(schema)


def closed_registry() -> str:
    return f"http://127.0.0.1:{free_port(47300)}/apis/ccompat/v7"


def test_an_id_is_recalled_for_the_same_registry_subject_and_schema_text() -> None:
    assert recall(ENTRIES, REGISTRY, "events_v2-value", TEXT) == 7


@pytest.mark.parametrize(("registry", "subject", "text"), [
    (REGISTRY, "events_v2-value", changed_schema()),
    (REGISTRY, "events_v3-value", TEXT),
    ("http://other-registry:8081", "events_v2-value", TEXT),
], ids=["changed schema", "other subject", "other registry"])
def test_an_id_is_refused_for_anything_else(registry: str, subject: str, text: str) -> None:
    assert recall(ENTRIES, registry, subject, text) is None


def test_a_new_registration_replaces_only_its_own_entry() -> None:
    evolved = Remembered(REGISTRY, "events_v2-value", fingerprint(changed_schema()), 9)
    both = remember(ENTRIES, evolved)
    assert both == [*ENTRIES, evolved]
    assert remember(both, Remembered(REGISTRY, "events_v2-value", fingerprint(TEXT), 11)) == [
        evolved, Remembered(REGISTRY, "events_v2-value", fingerprint(TEXT), 11)]


def test_the_file_survives_the_process_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    SchemaIdMemory(tmp_path / "state").remember(REGISTRY, "events_v2-value", TEXT, 7)
    assert SchemaIdMemory(tmp_path / "state").recall(REGISTRY, "events_v2-value", TEXT) == 7
    assert [p.name for p in (tmp_path / "state").iterdir()] == [FILE_NAME]
    assert json.loads((tmp_path / "state" / FILE_NAME).read_text())["schemas"][0]["schema_id"] == 7


def test_an_unreadable_file_is_ignored_and_rewritten(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text('{"schemas": [{"registry": ')  # torn by hand; renames never leave this
    memory = SchemaIdMemory(tmp_path)
    assert memory.recall(REGISTRY, "events_v2-value", TEXT) is None
    memory.remember(REGISTRY, "events_v2-value", TEXT, 7)
    assert SchemaIdMemory(tmp_path).recall(REGISTRY, "events_v2-value", TEXT) == 7


def test_an_unreachable_registry_gives_the_remembered_id_and_the_serde_encodes_with_it(tmp_path: Path) -> None:
    url = closed_registry()
    SchemaIdMemory(tmp_path).remember(url, "events_v2-value", TEXT, 7)
    client = SchemaRegistryClient(RegistrySettings(url=url), timeout=2, memory=SchemaIdMemory(tmp_path))
    serde = AvroSerde(client, "events_v2-value", load_schema("interaction_event"))
    assert serde.schema_id == 7
    with capture_logs() as logs:
        client.log_recalled()
    [line] = logs
    assert "unreachable" in line["event"] and "remembered" in line["event"]
    assert line["subjects"] == {"events_v2-value": 7} and line["registry"] == url


def test_an_unreachable_registry_still_fails_a_changed_schema_naming_the_memory(tmp_path: Path) -> None:
    url = closed_registry()
    SchemaIdMemory(tmp_path).remember(url, "events_v2-value", TEXT, 7)
    client = SchemaRegistryClient(RegistrySettings(url=url), timeout=2, memory=SchemaIdMemory(tmp_path))
    with pytest.raises(RegistryUnavailable, match="unreachable while registering") as raised:
        client.register("events_v2-value", changed_schema())
    assert str(tmp_path / FILE_NAME) in str(raised.value) and "events_v2-value" in str(raised.value)
    assert client.recalled == {}


@pytest.mark.registry
def test_a_registration_is_remembered_under_the_registry_url(schema_registry_url: str, tmp_path: Path) -> None:
    subject = f"rekey-memory-{uuid.uuid4().hex[:10]}-value"
    client = SchemaRegistryClient(RegistrySettings(url=schema_registry_url), memory=SchemaIdMemory(tmp_path))
    schema_id = client.register(subject, load_schema("interaction_event"))
    assert SchemaIdMemory(tmp_path).recall(client.url, subject, TEXT) == schema_id
    assert client.recalled == {}

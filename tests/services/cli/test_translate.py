"""`rekey translate`: the onboarding dry run on a file and on a live topic, through the services' own pipeline."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from confluent_kafka import Producer
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app
from kafka_rekey.shared.partitioning import partition_for

CATALOG = str(Path(__file__).resolve().parents[3] / "catalog" / "topics.yaml")
EVENT = {"orgId": "org-1", "interactionId": "call-1", "eventId": "e-1", "eventType": "start",
         "interactionType": "call", "timestamp": "2023-10-27T14:30:00.250Z", "data": {"agentId": "a-1"}}
CHANGE = {"op": "u", "ts_ms": 1698417001500, "before": None,
          "after": {"org_id": "org-2", "interaction_id": "int-9", "interaction_type": "chat",
                    "updated_at": 1698417000250999},
          "source": {"schema": "public", "table": "interactions", "lsn": 42, "ts_ms": 1698417001000}}


def _run(*args: str) -> tuple[int, list[dict[str, object]]]:
    result = CliRunner().invoke(app, ["translate", "--catalog", CATALOG, *args])
    return result.exit_code, [json.loads(line) for line in result.output.splitlines()]


def test_a_file_of_events_skips_and_poison_pills(tmp_path: Path) -> None:
    lines = tmp_path / "sample.jsonl"
    lines.write_text("\n".join([json.dumps(EVENT), json.dumps({**EVENT, "interactionId": None}), "null",
                                "not json"]) + "\n")
    code, output = _run("--source-format", "ccaas-json", "--file", str(lines))
    assert code == 3  # a poison pill among them
    event, missing, tombstone, garbage, counts = output
    assert (event["outcome"], event["org_id"], event["interaction_id"], event["event_id"], event["event_type"],
            event["event_time_ms"]) == ("event", "org-1", "call-1", "e-1", "start", 1698417000250)
    [target] = event["outputs"]  # type: ignore[misc]
    assert target["key"] == "org-1:call-1" and target["partition"] == partition_for("org-1:call-1", 8)
    assert (missing["outcome"], missing["reason"], missing["field"]) == (
        "poison", "missing_interaction_id", "interactionId")
    assert (tombstone["outcome"], tombstone["reason"]) == ("skip", "tombstone")
    assert (garbage["outcome"], garbage["reason"]) == ("poison", "undecodable")
    assert counts == {"counts": {"event": 1, "skip": {"tombstone": 1},
                                 "poison": {"missing_interaction_id": 1, "undecodable": 1}}}


def test_a_catalog_source_with_keyed_lines(tmp_path: Path) -> None:
    lines = tmp_path / "cdc.jsonl"
    lines.write_text(json.dumps({"key": '{"id": 9}', "value": CHANGE}) + "\n"
                     + json.dumps({"key": '{"id": 9}', "value": None}) + "\n")
    code, output = _run("--source", "crm.public.interactions", "--file", str(lines), "--keyed")
    assert code == 0, output
    change, tombstone, counts = output
    assert (change["org_id"], change["interaction_id"], change["event_type"], change["event_time_ms"]) == (
        "org-2", "int-9", "updated", 1698417000250)
    assert tombstone["outcome"] == "skip" and counts["counts"]["event"] == 1


def test_a_vendor_preset_on_its_published_examples(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "fixtures" / "sources" / "genesys-eventbridge"
    lines = tmp_path / "eventbridge.jsonl"
    lines.write_text("".join(json.dumps(json.loads((examples / f"{name}.json").read_text())) + "\n"
                             for name in ("customer-start", "customer-end", "audit-user-presence")))
    code, output = _run("--format", "genesys-eventbridge", "--file", str(lines))  # the alias of --source-format
    assert code == 0, output
    start, end, audit, counts = output
    assert (start["org_id"], start["interaction_id"], start["event_type"]) == (
        "32aa07aa-db1b-4987-abd0-9483601ec29d", "2f7bf00a-0fc2-4d6a-9b56-92238191433e",
        "v2.detail.events.conversation.{id}.customer.start")
    assert end["event_time_ms"] == 1649237504949
    assert (audit["outcome"], audit["reason"]) == ("skip", "not_an_interaction")
    assert counts == {"counts": {"event": 2, "skip": {"not_an_interaction": 1}, "poison": {}}}


def test_arguments_are_checked() -> None:
    result = CliRunner().invoke(app, ["translate", "--catalog", CATALOG, "--source-format", "ccaas-json"])
    assert result.exit_code == 2
    assert result.output.splitlines() == ["error: give exactly one of --file F.jsonl or --topic T"]


@pytest.mark.broker
def test_a_live_topic(kafka_bootstrap: str, topic_factory) -> None:  # type: ignore[no-untyped-def]
    topic = topic_factory(partitions=2, prefix="onboard")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(5):
        producer.produce(topic, value=json.dumps({**EVENT, "eventId": f"e-{i}"}).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    code, output = _run("--source-format", "ccaas-json", "--topic", topic, "--limit", "3", "-b", kafka_bootstrap)
    assert code == 0, output
    assert [line["outcome"] for line in output[:-1]] == ["event"] * 3
    assert output[-1] == {"counts": {"event": 3, "skip": {}, "poison": {}}}


@pytest.mark.broker
def test_a_missing_topic_is_one_line_naming_it(kafka_bootstrap: str) -> None:
    result = CliRunner().invoke(app, ["translate", "--catalog", CATALOG, "--source-format", "ccaas-json",
                                      "--topic", "no-such-topic-here", "-b", kafka_bootstrap])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "error: Kafka refused: topic 'no-such-topic-here': Broker: Unknown topic or partition"]


def _debezium_avro(topic: str, registry_url: str) -> list[tuple[bytes, bytes]]:
    """A create and a delete (ids only in the key) of the `interactions` table through the Avro converter, with
    the writer schemas registered as the converter registers them (`<topic>-key`, `<topic>-value`)."""
    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.services.settings import RegistrySettings
    from tests.shared.translation.test_debezium_avro import KEY_SCHEMA, ROW, VALUE_SCHEMA, avro, change

    with SchemaRegistryClient(RegistrySettings(url=registry_url)) as registry:
        key_id = registry.register(f"{topic}-key", KEY_SCHEMA)
        value_id = registry.register(f"{topic}-value", VALUE_SCHEMA)
    key = avro(KEY_SCHEMA, key_id, {"org_id": "org-7", "interaction_id": "int-42"})
    return [(key, avro(VALUE_SCHEMA, value_id, change("c", after=ROW))),
            (key, avro(VALUE_SCHEMA, value_id, change("d")))]


@pytest.mark.broker
def test_a_live_topic_of_debezium_avro_reads_writer_schemas_from_the_registry(
        kafka_bootstrap: str, schema_registry_url: str, topic_factory,  # type: ignore[no-untyped-def]
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    topic = topic_factory(partitions=1, prefix="cdc-avro")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key, value in _debezium_avro(topic, schema_registry_url):
        producer.produce(topic, value=value, key=key)
    assert producer.flush(30) == 0
    monkeypatch.setenv("REKEY_REGISTRY_URL", schema_registry_url)
    with caplog.at_level(logging.INFO):
        code, output = _run("--source-format", "debezium", "--topic", topic, "--limit", "2", "-b", kafka_bootstrap)
    assert code == 0, output
    assert [record.getMessage() for record in caplog.records if record.name == "httpx"] == []  # its request lines
    created, deleted, counts = output
    assert (created["event_type"], created["org_id"], created["interaction_id"], created["event_time_ms"]) == (
        "created", "org-7", "int-42", 1_698_417_000_250)
    assert (deleted["event_type"], deleted["org_id"], deleted["interaction_id"]) == ("deleted", "org-7", "int-42")
    assert counts == {"counts": {"event": 2, "skip": {}, "poison": {}}}

    monkeypatch.setenv("REKEY_REGISTRY_URL", "http://127.0.0.1:9/apis/ccompat/v7")  # nothing listens there
    result = CliRunner().invoke(app, ["translate", "--catalog", CATALOG, "--source-format", "debezium",
                                      "--topic", topic, "--limit", "1", "-b", kafka_bootstrap])
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith("error: schema registry at http://127.0.0.1:9/apis/ccompat/v7 is unreachable while "
                           "looking up schema id")

"""`to_avro_record`: the InteractionEvent record is strictly valid Avro, JSON-safe and byte-identical per input."""

from __future__ import annotations

import json

from kafka_rekey.shared.avro import encode_body, load_schema, parse_schema
from kafka_rekey.shared.translation import DomainEventDraft, SourceFormat, SourceRecord, to_avro_record, translate

INTERACTION_EVENT = parse_schema(load_schema("interaction_event"))
EVENT = (b'{"orgId":"org-7","interactionId":"int-42","eventId":"e-1","eventType":"end",'
         b'"timestamp":"2023-10-27T14:30:00Z","data":{"agentId":"a-9","wrapUp":"sale"}}')
CHANGE = (b'{"op":"u","before":null,"after":{"org_id":"org-7","interaction_id":"int-42","status":"completed",'
          b'"interaction_type":"call","updated_at":"2023-10-27T14:30:00Z"},'
          b'"source":{"schema":"public","table":"interactions","lsn":99,"ts_ms":1698417000000}}')


def draft(value: bytes, source_format: SourceFormat) -> DomainEventDraft:
    outcome = translate(SourceRecord("src", 2, 77, None, value), source_format)
    assert isinstance(outcome, DomainEventDraft), outcome
    return outcome


def test_records_of_both_formats_encode_strictly_against_the_contract() -> None:
    for value, source_format in ((EVENT, SourceFormat.CCAAS_JSON), (CHANGE, SourceFormat.DEBEZIUM)):
        record = to_avro_record(draft(value, source_format), 3)
        assert record["sequence"] == 3
        assert record["source"] == {"topic": "src", "partition": 2, "offset": 77}
        encode_body(INTERACTION_EVENT, record)


def test_the_record_survives_a_json_hop_unchanged() -> None:
    record = to_avro_record(draft(CHANGE, SourceFormat.DEBEZIUM), 1)
    assert json.loads(json.dumps(record)) == record


def test_the_same_input_gives_byte_identical_avro() -> None:
    first = encode_body(INTERACTION_EVENT, to_avro_record(draft(EVENT, SourceFormat.CCAAS_JSON), 5))
    second = encode_body(INTERACTION_EVENT, to_avro_record(draft(EVENT, SourceFormat.CCAAS_JSON), 5))
    assert first == second

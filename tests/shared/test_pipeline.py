"""`RecordPipeline.process`: one source record to its routed, encoded domain records, a dead letter or a skip."""

from __future__ import annotations

import json

from kafka_rekey.shared.avro import decode_body, frame, load_schema, parse_schema, stamp_sequence, unframe, wire_header
from kafka_rekey.shared.catalog import parse_catalog
from kafka_rekey.shared.pipeline import DeadLetter, RecordPipeline, Routed, sequence_headers
from kafka_rekey.shared.routing import route
from kafka_rekey.shared.translation import PoisonReason, Skip, SkipReason, SourceRecord
from kafka_rekey_dev.embedded.maven import REPO_ROOT

CATALOG = parse_catalog((REPO_ROOT / "catalog" / "topics.yaml").read_text(), "catalog/topics.yaml")
SOURCE = CATALOG.sources[0]
OUTPUTS = [topic for family in CATALOG.families.values() for topic in family.output_topics]


def _record(value: bytes | None, offset: int = 5) -> SourceRecord:
    return SourceRecord(SOURCE.name, 2, offset, b"random-key", value, {"trace": b"t-1"}, 1_700_000_000_000)


def _event(**overrides: object) -> bytes:
    event = {"orgId": "org-acme", "interactionId": "int-42", "eventId": "ev-1", "eventType": "start",
             "interactionType": "call", "timestamp": "2026-01-02T03:04:05.678Z", "data": {"agentId": "a-1"}}
    return json.dumps({**event, **overrides}).encode()


def test_an_event_becomes_one_record_per_family_with_the_route_and_a_stampable_value() -> None:
    pipeline = RecordPipeline(CATALOG, "acl", "1.2.3", {topic: wire_header(7) for topic in OUTPUTS})
    result = pipeline.process(_record(_event()), SOURCE.translation, SOURCE.feeds)
    assert isinstance(result, Routed)
    assert (result.draft.org_id, result.draft.interaction_id, result.draft.event_id) == ("org-acme", "int-42", "ev-1")
    assert [r.route for r in result.records] == [route(CATALOG, f, "org-acme", "int-42") for f in SOURCE.feeds]
    schema = parse_schema(load_schema("interaction_event"))
    for record in result.records:
        assert (record.dedupe_id, record.src) == ("ev-1", f"{SOURCE.name}/2/5")
        schema_id, body = unframe(stamp_sequence(record.head, 17, record.tail))
        decoded = decode_body(body, schema)
        assert schema_id == 7
        assert (decoded["sequence"], decoded["org_id"], decoded["event_type"]) == (17, "org-acme", "start")
        assert decoded["source"] == {"topic": SOURCE.name, "partition": 2, "offset": 5}
    assert sequence_headers(17, "s/2/5") == [("seq", b"17"), ("src", b"s/2/5")]


def test_without_wire_headers_the_head_is_bare_avro_for_the_backfill_to_frame() -> None:
    framed = RecordPipeline(CATALOG, "acl", "1", {t: wire_header(3) for t in OUTPUTS})
    bare = RecordPipeline(CATALOG, "backfill", "1")
    with_header = framed.process(_record(_event()), SOURCE.translation, SOURCE.feeds)
    without = bare.process(_record(_event()), SOURCE.translation, SOURCE.feeds)
    assert isinstance(with_header, Routed) and isinstance(without, Routed)
    assert with_header.records[0].head == frame(3, without.records[0].head)


def test_a_poison_pill_keeps_its_bytes_and_names_what_was_wrong_and_where() -> None:
    result = RecordPipeline(CATALOG, "acl", "1.2.3").process(_record(_event(orgId=None)), SOURCE.translation,
                                                            SOURCE.feeds)
    assert isinstance(result, DeadLetter)
    assert result.pill.reason_code == PoisonReason.MISSING_ORG_ID
    assert (result.topic, result.key, result.value) == (CATALOG.dlq_topic, b"random-key", _event(orgId=None))
    headers = dict(result.headers)
    assert headers["trace"] == b"t-1"
    assert (headers["dlq.reason"], headers["dlq.source.offset"], headers["dlq.service"]) == (
        b"missing_org_id", b"5", b"acl")


def test_a_tombstone_is_a_counted_skip() -> None:
    result = RecordPipeline(CATALOG, "acl", "1").process(_record(None), SOURCE.translation, SOURCE.feeds)
    assert isinstance(result, Skip) and result.reason == SkipReason.TOMBSTONE

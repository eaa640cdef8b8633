"""Dead letters read back from their headers, selected, and what a redrive decides for each under a catalog."""

from __future__ import annotations

import json

import pytest

from kafka_rekey.shared.catalog import parse_catalog
from kafka_rekey.shared.deadletter import dead_letter_headers
from kafka_rekey.shared.pipeline import RecordPipeline
from kafka_rekey.shared.redrive import (
    REDRIVEN_FROM_HEADER,
    AlreadyRedriven,
    Resend,
    Selection,
    StillDead,
    decide,
    hour_of,
    parse_dead_letter,
)
from kafka_rekey.shared.translation import SourceRecord
from kafka_rekey_dev.embedded.maven import REPO_ROOT

CATALOG = parse_catalog((REPO_ROOT / "catalog" / "topics.yaml").read_text(), "catalog/topics.yaml")
SOURCE = CATALOG.sources[0]
DEAD_AT = 1_764_208_800_000  # 2025-11-27T02:00:00Z


def _event(timestamp: str) -> bytes:
    return json.dumps({"orgId": "org-acme", "interactionId": "int-1", "eventId": "ev-1", "eventType": "start",
                       "timestamp": timestamp}).encode()


def _letter(value: bytes, reason: str = "bad_timestamp", offset: int = 9, timestamp: int = DEAD_AT):
    headers = dead_letter_headers(reason=reason, error="timestamp 'yesterday' is not ISO-8601", field="timestamp",
                                  source_topic=SOURCE.name, source_partition=3, source_offset=41, service="acl",
                                  service_version="1", original_headers={"trace": b"t-1"})
    return parse_dead_letter(CATALOG.dlq_topic, 2, offset, timestamp, b"k-1", value, headers)


def test_a_dead_letter_is_read_back_from_its_headers() -> None:
    letter = _letter(_event("yesterday"))
    assert (letter.reason, letter.field, letter.source_topic, letter.source_partition, letter.source_offset) == (
        "bad_timestamp", "timestamp", SOURCE.name, 3, 41)
    assert letter.position == f"{CATALOG.dlq_topic}/2/9"
    assert letter.original_headers == [("trace", b"t-1")]


def test_a_record_without_dlq_context_is_refused_naming_it_and_the_header() -> None:
    with pytest.raises(ValueError, match=r"^dead letter dlq/0/4: no dlq.reason header$"):
        parse_dead_letter("dlq", 0, 4, 0, None, b"{}", [("trace", b"x")])
    headers = [("dlq.reason", b"x"), ("dlq.source.topic", b"s"), ("dlq.source.partition", b"one")]
    with pytest.raises(ValueError, match=r"dlq.source.partition is 'one', expected a number"):
        parse_dead_letter("dlq", 0, 4, 0, None, b"{}", headers)


def test_a_selection_takes_reason_source_and_a_half_open_time_range() -> None:
    letter = _letter(_event("yesterday"))
    assert Selection().matches(letter)
    assert Selection(reason="bad_timestamp", source=SOURCE.name, since_ms=DEAD_AT, until_ms=DEAD_AT + 1).matches(letter)
    assert not Selection(reason="undecodable").matches(letter)
    assert not Selection(source="other").matches(letter)
    assert not Selection(until_ms=DEAD_AT).matches(letter)
    assert not Selection(since_ms=DEAD_AT + 1).matches(letter)


def test_hours() -> None:
    assert hour_of(DEAD_AT + 59 * 60_000) == "2025-11-27T02:00Z"


def _translate(letter):
    pipeline = RecordPipeline(CATALOG, "rekey-redrive", "test", encode=False)
    record = SourceRecord(letter.source_topic, letter.source_partition, letter.source_offset, letter.key,
                          letter.value, dict(letter.original_headers), letter.timestamp_ms)
    return pipeline.process(record, SOURCE.translation, SOURCE.feeds)


def test_a_dead_letter_that_translates_now_is_resent_as_it_was_plus_where_it_was_dead_lettered() -> None:
    letter = _letter(_event("2026-01-02T03:04:05Z"))
    verdict = decide(letter, _translate(letter))
    assert verdict == Resend(SOURCE.name, 3, b"k-1", letter.value,
                             [("trace", b"t-1"), (REDRIVEN_FROM_HEADER, letter.position.encode())], DEAD_AT)


def test_a_dead_letter_redriven_twice_names_only_its_last_dead_letter() -> None:
    first = _letter(_event("2026-01-02T03:04:05Z"))
    again = parse_dead_letter(CATALOG.dlq_topic, 5, 77, DEAD_AT, first.key, first.value,
                              [*first.headers, (REDRIVEN_FROM_HEADER, b"old/0/1")])
    verdict = decide(again, _translate(again))
    assert isinstance(verdict, Resend)
    assert [value for name, value in verdict.headers if name == REDRIVEN_FROM_HEADER] == [again.position.encode()]


def test_a_dead_letter_still_poison_is_left_with_its_new_reason_and_one_redriven_before_is_not_sent() -> None:
    letter = _letter(_event("yesterday"))
    verdict = decide(letter, _translate(letter))
    assert isinstance(verdict, StillDead)
    assert (verdict.reason, verdict.field) == ("bad_timestamp", "timestamp")
    assert decide(letter, None) == AlreadyRedriven(letter.position)

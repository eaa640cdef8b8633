"""The pure checker: identical re-emissions are duplicates; the same (key, sequence) for another event is a
conflict and always a violation; gaps and order are judged on first occurrences."""

from __future__ import annotations

from kafka_rekey.shared.checking import OutputRecord, check_outputs
from kafka_rekey.shared.partitioning import partition_for

TOPIC, KEY = "t_v1", "org-1:i-1"
PARTITION = partition_for(KEY, 4)


def _records(*rows: tuple[int, str]) -> list[OutputRecord]:
    return [OutputRecord(TOPIC, PARTITION, offset, KEY, sequence, event) for offset, (sequence, event) in
            enumerate(rows)]


def test_identical_re_emission_is_a_duplicate_allowed_only_at_least_once() -> None:
    report = check_outputs(_records((1, "a"), (2, "b"), (2, "b"), (3, "c")), {TOPIC: 4}, {"a", "b", "c"})
    assert report.duplicates == 1 and not report.conflicting
    assert report.passed(exactly_once=False)
    assert report.violations(exactly_once=True) == {"duplicates": 1}


def test_a_sequence_given_to_two_events_is_a_conflict() -> None:
    report = check_outputs(_records((1, "a"), (2, "b"), (2, "c"), (3, "d")), {TOPIC: 4}, {"a", "b", "c", "d"})
    assert report.conflicting == [f"{TOPIC}/{KEY}#2"]
    assert not report.passed(exactly_once=False)


def test_gap_and_order() -> None:
    assert check_outputs(_records((1, "a"), (3, "c")), {TOPIC: 4}).gaps == [f"{TOPIC}/{KEY}"]
    assert check_outputs(_records((2, "b"), (1, "a")), {TOPIC: 4}).out_of_order == [f"{TOPIC}/{KEY}"]


def test_an_event_under_two_sequences_is_renumbered() -> None:
    report = check_outputs(_records((1, "a"), (2, "b"), (3, "b")), {TOPIC: 4}, {"a", "b"})
    assert report.renumbered == [f"{TOPIC}/{KEY}:b"]
    assert not report.passed(exactly_once=False)

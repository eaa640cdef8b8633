"""The CDC check: a table's committed row changes against the domain events, matched per interaction in
sequence order by op, row id, column values and the unchanged TOASTed columns."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

from kafka_rekey.shared.checking.cdc import CdcEvent, RowChange, check_cdc, read_manifest, text_digest
from kafka_rekey.shared.partitioning import partition_for

TOPIC = "events_v2"
PARTITIONS = {TOPIC: 8}
NOTES = "n" * 9000
ROW = {"org_id": "org-a", "interaction_id": "i-1", "status": "queued", "interaction_type": "call", "amount": "1.50"}


def _changes() -> list[RowChange]:
    """Row 7 of interaction org-a:i-1: in the snapshot, updated (notes left alone), deleted; row 8 created."""
    return [
        RowChange(1, "r", 7, "org-a", "i-1", ROW, {"notes": text_digest(NOTES)}),
        RowChange(2, "u", 7, "org-a", "i-1", {**ROW, "status": "closed"}, {"notes": None}),
        RowChange(3, "c", 8, "org-a", "i-2", {**ROW, "interaction_id": "i-2"}, {"notes": text_digest(NOTES)}),
        RowChange(3, "d", 7, "org-a", "i-1"),
    ]


def _event(key: str, sequence: int, op: str, payload: dict[str, Any], token: int) -> CdcEvent:
    types = {"r": "snapshot", "c": "created", "u": "updated", "d": "deleted"}
    return CdcEvent(TOPIC, partition_for(key, 8), token, key, sequence, f"lsn={token}:{op}", types[op], op, token,
                    json.dumps(payload))


def _events() -> list[CdcEvent]:
    return [
        _event("org-a:i-1", 1, "r", {"id": 7, **ROW, "notes": NOTES}, 100),
        _event("org-a:i-1", 2, "u", {"id": 7, **ROW, "status": "closed", "__unchanged_columns": ["notes"]}, 200),
        _event("org-a:i-2", 1, "c", {"id": 8, **ROW, "interaction_id": "i-2", "notes": NOTES}, 300),
        _event("org-a:i-1", 3, "d", {"id": 7, "org_id": "", "status": ""}, 310),
    ]


def test_every_change_one_event_in_order_passes() -> None:
    report = check_cdc(_changes(), _events(), PARTITIONS)
    assert report.passed(), report.violations()
    assert (report.changes, report.events, report.keys, report.unchanged_named) == (4, 4, 2, 1)
    assert report.committed_by_op == report.events_by_op == {"r": 1, "u": 1, "c": 1, "d": 1}


def test_a_dead_lettered_delete_is_lost_and_a_dead_letter() -> None:
    report = check_cdc(_changes(), _events()[:3], PARTITIONS, {"unknown_row": 1})
    assert report.lost == ["org-a:i-1: d of row 7 (change 3 of 3)"]
    assert report.violations() == {"lost": 1, "dead_letters": 1}


def test_changes_of_an_interaction_out_of_commit_order_are_mismatched() -> None:
    events = _events()
    events[0], events[1] = (dataclasses.replace(events[1], sequence=1, ordering_token=100, offset=0),
                            dataclasses.replace(events[0], sequence=2, ordering_token=200, offset=1))
    report = check_cdc(_changes(), events, PARTITIONS)
    assert [m.split(":")[1] for m in report.mismatched] == ["i-1#1", "i-1#2"]
    assert not report.passed()


def test_lsns_must_rise_with_the_sequence() -> None:
    events = _events()
    events[1] = dataclasses.replace(events[1], ordering_token=50)
    assert check_cdc(_changes(), events, PARTITIONS).lsn_out_of_order == ["org-a:i-1"]


def test_the_toast_placeholder_and_a_carried_unchanged_column_are_violations() -> None:
    events = _events()
    events[1] = _event("org-a:i-1", 2, "u", {"id": 7, **ROW, "status": "closed",
                                             "notes": "__debezium_unavailable_value"}, 200)
    report = check_cdc(_changes(), events, PARTITIONS)
    assert report.placeholders == ["org-a:i-1#2"]
    assert report.mismatched == ["org-a:i-1#2: __unchanged_columns None, the change left ['notes'] unchanged"]


def test_a_value_other_than_the_committed_one_is_mismatched() -> None:
    events = _events()
    events[2] = _event("org-a:i-2", 1, "c", {"id": 8, **ROW, "interaction_id": "i-2", "amount": "1.5",
                                             "notes": NOTES}, 300)
    assert check_cdc(_changes(), events, PARTITIONS).mismatched == [
        "org-a:i-2#1: amount '1.5', the change wrote '1.50'"]


def test_an_event_of_no_committed_change_is_unexpected_and_a_gap_is_found() -> None:
    rolled_back = _event("org-a:i-9", 1, "c", {"id": 9, **ROW, "interaction_id": "i-9", "notes": NOTES}, 400)
    gap = dataclasses.replace(_events()[2], sequence=2)
    report = check_cdc(_changes(), [*_events()[:2], gap, _events()[3], rolled_back], PARTITIONS)
    assert report.unexpected == ["org-a:i-9#1 created"]
    assert report.outputs.gaps == [f"{TOPIC}/org-a:i-2"]


def test_a_duplicate_event_is_a_violation() -> None:
    events = _events()
    report = check_cdc(_changes(), [*events, dataclasses.replace(events[0], offset=99)], PARTITIONS)
    assert report.violations() == {"duplicates": 1}


def test_the_manifest_round_trips_and_notes_lines_are_ignored() -> None:
    lines = io.StringIO("".join(json.dumps(c.to_json()) + "\n" for c in _changes())
                        + json.dumps({"kind": "rolled_back", "changes": 3}) + "\n")
    assert read_manifest(lines) == _changes()

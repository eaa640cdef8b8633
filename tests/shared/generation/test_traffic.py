"""The traffic generator: exact counts, determinism, skew, lifecycles, faults, and that every record
translates the way the manifest says it will."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

import pytest

from kafka_rekey.shared.generation import GenerationConfig, PlannedRecord, RecordKind, generate
from kafka_rekey.shared.generation.config import GENERATED_FORMATS
from kafka_rekey.shared.translation import (
    DomainEventDraft,
    PoisonPill,
    Skip,
    SkipReason,
    SourceFormat,
    SourceRecord,
    translate,
)

LIFECYCLE_ORDER = {"start": 0, "answer": 1, "transfer": 2, "end": 3}


def plan(**overrides: Any) -> list[PlannedRecord]:
    settings: dict[str, Any] = {"events": 20_000, "orgs": 50, "malformed_rate": 0.02, "duplicate_rate": 0.03,
                                   "seed": 11, **overrides}
    return list(generate(GenerationConfig(**settings)))


@pytest.fixture(scope="module", params=GENERATED_FORMATS)
def traffic(request: pytest.FixtureRequest) -> tuple[SourceFormat, list[PlannedRecord]]:
    return request.param, plan(source_format=request.param)


def test_exactly_the_requested_number_of_records_indexed_in_send_order(
    traffic: tuple[SourceFormat, list[PlannedRecord]],
) -> None:
    _, records = traffic
    assert [r.index for r in records] == list(range(20_000))


def test_the_same_seed_gives_the_same_records_and_another_seed_does_not() -> None:
    assert plan(events=3_000) == plan(events=3_000)
    assert [r.value for r in plan(events=3_000)] != [r.value for r in plan(events=3_000, seed=12)]


def test_fault_rates_are_honoured(traffic: tuple[SourceFormat, list[PlannedRecord]]) -> None:
    _, records = traffic
    kinds = Counter(r.kind for r in records)
    assert 0.015 < kinds[RecordKind.MALFORMED] / 20_000 < 0.025
    assert 0.025 < kinds[RecordKind.DUPLICATE] / 20_000 < 0.035
    reasons = Counter(r.malformed_reason for r in records if r.kind is RecordKind.MALFORMED)
    assert set(reasons) == {"undecodable", "missing_org_id", "bad_timestamp"}
    assert 0.01 < sum(r.late for r in records) / 20_000 < 0.03


def test_every_record_translates_as_the_manifest_says(traffic: tuple[SourceFormat, list[PlannedRecord]]) -> None:
    source_format, records = traffic
    by_index = {r.index: r for r in records}
    for record in records:
        outcome = translate(SourceRecord("src", 0, record.index, record.key, record.value), source_format)
        if record.kind is RecordKind.MALFORMED:
            assert isinstance(outcome, PoisonPill) and outcome.reason_code == record.malformed_reason, record
        elif record.kind is RecordKind.TOMBSTONE:
            assert isinstance(outcome, Skip) and outcome.reason is SkipReason.TOMBSTONE
        else:
            assert isinstance(outcome, DomainEventDraft), (record, outcome)
            assert (outcome.event_id, outcome.org_id, outcome.interaction_id, outcome.event_type,
                    outcome.event_time_ms) == (record.event_id, record.org_id, record.interaction_id,
                                               record.event_type, record.event_time_ms)
            if record.kind is RecordKind.DUPLICATE:
                assert record.duplicate_of is not None and record.duplicate_of < record.index
                original = by_index[record.duplicate_of]
                assert original.kind is RecordKind.EVENT and original.event_id == outcome.dedupe_id


def test_event_ids_are_unique_among_first_deliveries(traffic: tuple[SourceFormat, list[PlannedRecord]]) -> None:
    _, records = traffic
    ids = [r.event_id for r in records if r.kind is RecordKind.EVENT]
    assert len(ids) == len(set(ids))


def test_lifecycles_run_start_answer_transfers_end_in_event_time() -> None:
    steps: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for record in plan(malformed_rate=0, duplicate_rate=0):
        assert record.interaction_id is not None and record.event_type is not None
        assert record.event_time_ms is not None
        steps[record.interaction_id].append((record.event_time_ms, record.event_type))
    finished = 0
    for events in steps.values():
        kinds = [kind for _, kind in sorted(events)]
        assert kinds[0] == "start" and kinds.count("start") == 1 and kinds.count("end") <= 1, kinds
        assert kinds == sorted(kinds, key=LIFECYCLE_ORDER.__getitem__), kinds
        assert kinds.count("answer") <= 1 and (kinds.count("transfer") == 0 or "answer" in kinds), kinds
        finished += kinds[-1] == "end"
    assert finished > len(steps) / 2


def test_late_events_arrive_after_their_successors_sometimes() -> None:
    last_time: dict[str, int] = {}
    out_of_order = 0
    for record in plan(malformed_rate=0, duplicate_rate=0, late_rate=0.05):
        assert record.interaction_id is not None and record.event_time_ms is not None
        if record.event_time_ms < last_time.get(record.interaction_id, 0):
            out_of_order += 1
            assert record.late
        last_time[record.interaction_id] = max(record.event_time_ms, last_time.get(record.interaction_id, 0))
    assert out_of_order > 10


def test_tenant_sizes_are_zipf_skewed_with_hot_orgs_on_top() -> None:
    records = plan(orgs=200, hot_orgs=("acme", "globex"), zipf=1.2, malformed_rate=0, duplicate_rate=0)
    sizes = Counter(r.org_id for r in records).most_common()
    assert [org for org, _ in sizes[:2]] == ["acme", "globex"]
    assert sizes[0][1] > 5 * sizes[20][1]
    assert len(sizes) > 100


def test_equal_tenants_with_zipf_zero() -> None:
    sizes = Counter(r.org_id for r in plan(orgs=10, zipf=0, malformed_rate=0, duplicate_rate=0)).values()
    assert max(sizes) < 1.3 * min(sizes)


def test_keys_are_arbitrary_some_missing() -> None:
    keys = [r.key for r in plan(events=2_000)]
    assert 0.3 < keys.count(None) / len(keys) < 0.5
    assert len({k for k in keys if k is not None}) > 900


def test_debezium_deletes_are_followed_by_their_tombstone() -> None:
    records = plan(source_format=SourceFormat.DEBEZIUM, malformed_rate=0, duplicate_rate=0, late_rate=0)
    tombstones = [i for i, r in enumerate(records) if r.kind is RecordKind.TOMBSTONE]
    assert tombstones
    for i in tombstones:
        delete = records[i - 1]
        assert delete.event_type == "deleted" and delete.interaction_id == records[i].interaction_id
        assert records[i].key == delete.key and json.loads(records[i].key or b"")["payload"] == {
            "id": json.loads(delete.value or b"")["payload"]["before"]["id"]}


@pytest.mark.parametrize("events", [0, 1, 2, 3, 57])
def test_tiny_runs_still_send_exactly_the_requested_records(events: int) -> None:
    for source_format in GENERATED_FORMATS:
        assert len(plan(events=events, late_rate=0.5, source_format=source_format)) == events


@pytest.mark.parametrize(("overrides", "message"), [
    ({"orgs": 0}, "orgs must be >= 1"),
    ({"malformed_rate": 1.5}, "malformed_rate must be within"),
    ({"malformed_rate": 0.6, "duplicate_rate": 0.5}, "must be < 1"),
    ({"orgs": 1, "hot_orgs": ("a", "b")}, "2 hot orgs given but only 1"),
    ({"hot_orgs": ("a", "a")}, "distinct"),
    ({"zipf": -1.0}, "zipf"),
    ({"source_format": "csv"}, "the generator writes source format ccaas-json, debezium, not 'csv'"),
    ({"source_format": "amazon-connect"},
     "the generator writes source format ccaas-json, debezium, not 'amazon-connect'"),
])
def test_bad_configs_say_what_is_wrong(overrides: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"events": 10, "orgs": 5, **overrides}
    with pytest.raises(ValueError, match=message):
        GenerationConfig(**settings)

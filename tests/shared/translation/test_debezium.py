"""Debezium change events of the `interactions` table: ops, both envelopes, tombstones, positions, pills."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.translation import (
    DomainEventDraft,
    PoisonPill,
    PoisonReason,
    Skip,
    SkipReason,
    SourceRecord,
    translate,
)

ROW = {
    "org_id": "org-7",
    "interaction_id": "int-42",
    "status": "active",
    "interaction_type": "chat",
    "agent_id": "a-9",
    "queue_id": "q-1",
    "updated_at": "2023-10-27T14:30:00.250000Z",
}
SOURCE = {"connector": "postgresql", "db": "cc", "schema": "public", "table": "interactions",
          "lsn": 24023128, "ts_ms": 1698417001000, "txId": 771}


def change(op: str, before: dict[str, Any] | None = None, after: dict[str, Any] | None = None,
           source: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"before": before, "after": after, "source": source or SOURCE, "op": op, "ts_ms": 1698417001500}


def run(value: dict[str, Any] | None, offset: int = 9) -> DomainEventDraft | Skip | PoisonPill:
    data = None if value is None else json.dumps(value).encode()
    return translate(SourceRecord("cdc.public.interactions", 1, offset, b'{"id": 1}', data), "debezium")


def test_an_update_uses_the_after_image() -> None:
    draft = run(change("u", before=dict(ROW, status="queued"), after=ROW))
    assert isinstance(draft, DomainEventDraft)
    assert (draft.org_id, draft.interaction_id, draft.event_type, draft.change_op) == ("org-7", "int-42",
                                                                                        "updated", "u")
    assert draft.interaction_type == "chat"
    assert draft.event_time_ms == 1698417000250
    assert draft.ordering_token == 24023128
    assert draft.event_id == draft.dedupe_id == "public.interactions:lsn=24023128:u:org-7:int-42"
    assert json.loads(draft.payload) == ROW


@pytest.mark.parametrize(("op", "event_type"), [("c", "created"), ("r", "snapshot")])
def test_creates_and_snapshot_reads(op: str, event_type: str) -> None:
    draft = run(change(op, after=ROW))
    assert isinstance(draft, DomainEventDraft) and draft.event_type == event_type


def test_a_delete_uses_the_before_image_and_the_commit_time() -> None:
    draft = run(change("d", before={"org_id": "org-7", "interaction_id": "int-42"}))
    assert isinstance(draft, DomainEventDraft)
    assert (draft.event_type, draft.event_time_ms, draft.interaction_type) == ("deleted", 1698417001000, None)


def test_the_schema_wrapper_gives_the_same_draft_as_the_plain_payload() -> None:
    plain = change("u", after=ROW)
    assert run({"schema": {"type": "struct", "name": "cdc.public.interactions.Envelope"}, "payload": plain}) == run(
        plain)


def test_a_redelivered_change_has_the_same_dedupe_id_from_another_offset() -> None:
    first, again = run(change("u", after=ROW), offset=9), run(change("u", after=ROW), offset=5000)
    assert isinstance(first, DomainEventDraft) and isinstance(again, DomainEventDraft)
    assert first.dedupe_id == again.dedupe_id and first.source != again.source


def test_snapshot_rows_sharing_one_lsn_do_not_collide() -> None:
    one = run(change("r", after=ROW))
    other = run(change("r", after=dict(ROW, interaction_id="int-43")))
    assert isinstance(one, DomainEventDraft) and isinstance(other, DomainEventDraft)
    assert one.dedupe_id != other.dedupe_id


def test_without_an_lsn_the_commit_time_orders_and_dedupes() -> None:
    source = {k: v for k, v in SOURCE.items() if k != "lsn"}
    draft = run(change("u", after=ROW, source=source))
    assert isinstance(draft, DomainEventDraft)
    assert draft.ordering_token == 1698417001000
    assert draft.dedupe_id == "public.interactions:ts=1698417001000:u:org-7:int-42"


def test_integer_ids_are_rendered_in_decimal() -> None:
    draft = run(change("c", after=dict(ROW, org_id=17, interaction_id=12345678901234)))
    assert isinstance(draft, DomainEventDraft) and (draft.org_id, draft.interaction_id) == ("17", "12345678901234")


@pytest.mark.parametrize("value", [None, {"schema": {"type": "struct"}, "payload": None}])
def test_tombstones_are_skipped(value: dict[str, Any] | None) -> None:
    outcome = run(value)
    assert isinstance(outcome, Skip) and outcome.reason == SkipReason.TOMBSTONE


def test_truncates_are_skipped() -> None:
    outcome = run({"op": "t", "source": SOURCE, "before": None, "after": None})
    assert isinstance(outcome, Skip) and outcome.reason == SkipReason.TRUNCATE


@pytest.mark.parametrize(("value", "reason", "field"), [
    (change("x", after=ROW), PoisonReason.SCHEMA_INVALID, "op"),
    ({"after": ROW, "source": SOURCE}, PoisonReason.SCHEMA_INVALID, "op"),
    (change("u", after=None), PoisonReason.SCHEMA_INVALID, "after"),
    (change("d", after=ROW), PoisonReason.SCHEMA_INVALID, "before"),
    ({"op": "u", "after": ROW}, PoisonReason.SCHEMA_INVALID, "source"),
    ({"schema": {}, "payload": [1]}, PoisonReason.SCHEMA_INVALID, "payload"),
    (change("u", after=dict(ROW, org_id=None)), PoisonReason.MISSING_ORG_ID, "after.org_id"),
    (change("d", before={"interaction_id": "int-42"}), PoisonReason.MISSING_ORG_ID, "before.org_id"),
    (change("c", after=dict(ROW, interaction_id="")), PoisonReason.MISSING_INTERACTION_ID, "after.interaction_id"),
    (change("c", after=dict(ROW, org_id=True)), PoisonReason.SCHEMA_INVALID, "after.org_id"),
    (change("u", after=dict(ROW, updated_at="27/10/2023")), PoisonReason.BAD_TIMESTAMP, "after.updated_at"),
    (change("u", after=dict(ROW, updated_at=1698417000250000)), PoisonReason.BAD_TIMESTAMP, "after.updated_at"),
    (change("u", after={k: v for k, v in ROW.items() if k != "updated_at"}), PoisonReason.BAD_TIMESTAMP,
     "after.updated_at"),
    (change("d", before=ROW, source={"table": "interactions", "lsn": 5}), PoisonReason.BAD_TIMESTAMP,
     "source.ts_ms"),
    (change("u", after=ROW, source={"table": "interactions"}), PoisonReason.SCHEMA_INVALID, "source.lsn"),
    (change("u", after=ROW, source={"table": "interactions", "lsn": -5}), PoisonReason.SCHEMA_INVALID,
     "source.lsn"),
    (change("u", after=ROW, source={"table": "interactions", "lsn": 2**64}), PoisonReason.SCHEMA_INVALID,
     "source.lsn"),
    (change("u", after=ROW, source={"lsn": 5}), PoisonReason.SCHEMA_INVALID, "source.table"),
])
def test_invalid_changes_name_reason_and_field(value: dict[str, Any], reason: PoisonReason, field: str) -> None:
    outcome = run(value)
    assert isinstance(outcome, PoisonPill), outcome
    assert (outcome.reason_code, outcome.field) == (reason, field)
    assert field in outcome.message

"""Both store adapters (PostgreSQL, SQLite): the version guard in SQL, history, corrections, state rebuild."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_rekey.services.sink.databases import open_store
from kafka_rekey.services.sink.store import Rejected, SinkStore
from kafka_rekey.shared.sink.events import SinkEvent
from kafka_rekey.shared.sink.plan import plan_batch
from kafka_rekey.shared.sink.state import derive_state
from kafka_rekey.shared.sink.watermark import Watermark
from tests.shared.sink.builders import event


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SinkStore]:
    url = (f"sqlite:///{tmp_path / 'sink.sqlite3'}" if request.param == "sqlite"
           else request.getfixturevalue("postgres_test_dsn"))
    opened = open_store(url, "calls")
    opened.ensure_schema()
    yield opened
    opened.close()


NO_WATERMARK = Watermark(None)


def _apply(store: SinkStore, events: list[SinkEvent], watermark: Watermark = NO_WATERMARK) -> Watermark:
    plan = plan_batch(events, store.stored(events), watermark)
    store.apply(plan)
    return plan.watermark


def test_batches_in_any_order_leave_the_same_rows(store: SinkStore) -> None:
    events = [event(f"i{i}", s) for i in range(4) for s in range(1, 6)]
    shuffled = events + events[:7]
    random.Random(5).shuffle(shuffled)
    for start in range(0, len(shuffled), 6):
        _apply(store, shuffled[start:start + 6])
    assert store.state() == derive_state(events)
    assert sorted(store.history(), key=lambda e: e.slot) == sorted(events, key=lambda e: e.slot)
    assert store.last_sequences({"o1:i0", "o1:none"}) == {"o1:i0": 5}


def test_watermark_corrections_and_rejected_records_are_stored(store: SinkStore) -> None:
    mark = _apply(store, [event("a", 1, event_time=100_000)], Watermark(5_000))
    plan = plan_batch([event("b", 1, event_time=90_000)], store.stored([event("b", 1)]), mark)
    store.apply(plan, [Rejected("t", 0, 9, b"k", b"\x00bad", "not avro")])
    assert [e.interaction_id for e in store.corrections()] == ["b"]
    assert store.load_watermark() == 100_000
    assert set(store.state()) == {("o1", "a")}


def test_rebuild_repairs_a_row_from_its_history(store: SinkStore) -> None:
    events = [event("a", s) for s in (1, 2, 3)]
    _apply(store, events)
    repair = plan_batch([event("a", 1, event_type="corrected")], store.stored(events), Watermark(None),
                        repair=True)
    store.apply(repair)
    assert store.history_of({("o1", "a")})[0].event_type == "corrected"
    store.rebuild_state({("o1", "a"), ("o1", "ghost")})
    assert store.state() == derive_state(store.history())


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_processes_starting_together_create_the_schema_once(database: str, request: pytest.FixtureRequest,
                                                            tmp_path: Path) -> None:
    """The sink and the reconciler start at the same moment on one database (the chart's Deployments)."""
    from concurrent.futures import ThreadPoolExecutor

    url = (f"sqlite:///{tmp_path / 'sink.sqlite3'}" if database == "sqlite"
           else request.getfixturevalue("postgres_test_dsn"))
    stores = [open_store(url, "together") for _ in range(6)]
    try:
        with ThreadPoolExecutor(len(stores)) as pool:
            list(pool.map(lambda store: store.ensure_schema(), stores))
        assert stores[0].load_watermark() is None
    finally:
        for store in stores:
            store.close()

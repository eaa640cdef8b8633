"""The sink against the real broker, registry and PostgreSQL: idempotent replays, watermark, reorder buffer,
offsets committed only after the database."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from kafka_rekey.services.sink.store import SinkStoreError
from kafka_rekey.shared.sink.state import derive_state
from tests.support.domain import (
    BASE_TIME,
    committed_offsets,
    domain_record,
    drain,
    interaction_events,
    make_sink,
    produce,
    settings_for,
    shuffled_with_duplicates,
    sink_events,
    snapshot,
)
from tests.support.kafka import end_offsets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.postgres]


def test_shuffled_replay_with_duplicates_twice_equals_one_clean_pass(
        kafka_bootstrap: str, schema_registry_url: str, topic_factory: Callable[..., str],
        postgres_test_dsn: str) -> None:
    clean = interaction_events()
    clean_topic, messy_topic = topic_factory(prefix="clean"), topic_factory(prefix="messy")
    produce(kafka_bootstrap, schema_registry_url, clean_topic, clean)
    produce(kafka_bootstrap, schema_registry_url, messy_topic, shuffled_with_duplicates(clean))

    reference = make_sink(settings_for(kafka_bootstrap, schema_registry_url, clean_topic, postgres_test_dsn,
                                       table="clean"))
    drain(reference, kafka_bootstrap)
    reference.close()
    for replay in range(2):  # a new group each time: the whole topic again
        sink = make_sink(settings_for(kafka_bootstrap, schema_registry_url, messy_topic, postgres_test_dsn,
                                      table="messy"))
        drain(sink, kafka_bootstrap)
        ignored = sink.metrics.value("rekey_sink_ignored_total", reason="duplicate")
        applied = sink.metrics.value("rekey_sink_applied_total")
        stale = sink.metrics.value("rekey_sink_ignored_total", reason="stale")
        sink.close()
        if replay == 1:
            assert (applied, stale) == (0, 0) and ignored > len(clean)

    assert snapshot(postgres_test_dsn, "messy") == snapshot(postgres_test_dsn, "clean")
    tables = snapshot(postgres_test_dsn, "clean")
    expected = derive_state(sink_events(clean))
    assert len(tables[""]) == len(expected) == 24 and len(tables["_events"]) == len(clean)
    assert tables["_corrections"] == []
    with psycopg.connect(postgres_test_dsn) as conn:
        rows = conn.execute('SELECT org_id, interaction_id, event_id, sequence, event_count FROM "messy"').fetchall()
    assert sorted(rows) == sorted((i[0], i[1], r.latest.event_id, r.latest.sequence, r.event_count)
                                  for i, r in expected.items())


def test_late_events_within_delta_land_and_older_ones_go_to_corrections(
        kafka_bootstrap: str, schema_registry_url: str, topic_factory: Callable[..., str],
        postgres_test_dsn: str) -> None:
    topic = topic_factory(partitions=1)
    minute = 60_000
    produce(kafka_bootstrap, schema_registry_url, topic, [
        ("o:new", domain_record("o", "new", 1, BASE_TIME + 10 * minute)),
        ("o:late", domain_record("o", "late", 1, BASE_TIME + 8 * minute)),        # 2 min late: within delta
        ("o:closed", domain_record("o", "closed", 1, BASE_TIME + 4 * minute)),    # 6 min late: beyond
        ("o:new", domain_record("o", "new", 2, BASE_TIME + 9 * minute)),          # late for its own key too
    ])
    settings = settings_for(kafka_bootstrap, schema_registry_url, topic, postgres_test_dsn, watermark_delta_s=300)
    sink = make_sink(settings)
    drain(sink, kafka_bootstrap)
    assert sink.metrics.value("rekey_sink_corrections_total", reason="beyond_watermark") == 1
    assert sink.metrics.value("rekey_sink_watermark_ms") == BASE_TIME + 5 * minute
    sink.close()

    # The watermark is the table's, not the process's: a restarted sink still closes old windows.
    produce(kafka_bootstrap, schema_registry_url, topic, [
        ("o:closed", domain_record("o", "closed", 2, BASE_TIME + 4 * minute + 1)),
        ("o:later", domain_record("o", "later", 1, BASE_TIME + 6 * minute)),  # within delta: lands
    ])
    restarted = make_sink(settings)
    drain(restarted, kafka_bootstrap)
    restarted.close()
    with psycopg.connect(postgres_test_dsn) as conn:
        rows = conn.execute('SELECT interaction_id, sequence, event_count FROM "interactions"').fetchall()
        corrections = conn.execute('SELECT interaction_id, sequence, reason, watermark FROM '
                                   '"interactions_corrections"').fetchall()
    assert sorted(rows) == [("late", 1, 1), ("later", 1, 1), ("new", 1, 2)]  # new#2 recorded, older than new#1
    assert sorted(corrections) == [("closed", 1, "beyond_watermark", BASE_TIME + 5 * minute),
                                   ("closed", 2, "beyond_watermark", BASE_TIME + 5 * minute)]


def test_reorder_buffer_holds_until_the_gap_fills_and_reports_a_gap_on_timeout(
        kafka_bootstrap: str, schema_registry_url: str, topic_factory: Callable[..., str],
        postgres_test_dsn: str) -> None:
    topic = topic_factory(partitions=1)
    t = BASE_TIME
    produce(kafka_bootstrap, schema_registry_url, topic, [
        ("o:a", domain_record("o", "a", 2, t + 2)),
        ("o:b", domain_record("o", "b", 1, t + 1)),
        ("o:a", domain_record("o", "a", 1, t + 1)),   # fills a's gap: a#1 then a#2 are released in order
        ("o:c", domain_record("o", "c", 1, t + 1)),
        ("o:c", domain_record("o", "c", 3, t + 3)),   # c#2 never comes
    ])
    settings = settings_for(kafka_bootstrap, schema_registry_url, topic, postgres_test_dsn, reorder_enabled=True,
                            reorder_timeout_s=3.0)
    sink = make_sink(settings)
    wait_until(lambda: sink.step() >= 0 and sink.metrics.value("rekey_sink_applied_total") == 4, 30,
               "a#1, a#2, b#1, c#1 applied")
    assert sink.metrics.value("rekey_sink_ignored_total", reason="stale") == 0  # a#2 waited for a#1
    assert sink.buffer is not None and sink.buffer.held_count == 1
    # c#3 (offset 4) is held, so the committed position stops there.
    assert committed_offsets(kafka_bootstrap, settings.sink.consumer_group, topic) == {0: 4}

    wait_until(lambda: sink.step() >= 0 and sink.metrics.value("rekey_sink_gaps_released_total",
                                                                 reason="timeout") == 1, 30, "c's gap released")
    assert sink.metrics.value("rekey_sink_applied_total") == 5
    wait_until(lambda: sink.step() >= 0 and committed_offsets(kafka_bootstrap, settings.sink.consumer_group,
                                                               topic) == {0: 5}, 30, "offset of c#3 committed")
    sink.close()
    with psycopg.connect(postgres_test_dsn) as conn:
        assert sorted(conn.execute('SELECT interaction_id, sequence FROM "interactions"').fetchall()) == [
            ("a", 2), ("b", 1), ("c", 3)]


def test_offsets_are_committed_only_after_the_database_commit(
        kafka_bootstrap: str, schema_registry_url: str, topic_factory: Callable[..., str],
        postgres_test_dsn: str) -> None:
    topic = topic_factory(partitions=2)
    events = interaction_events(orgs=2, interactions=5, per_interaction=4)
    first, second = events[:20], events[20:]
    produce(kafka_bootstrap, schema_registry_url, topic, first)
    settings = settings_for(kafka_bootstrap, schema_registry_url, topic, postgres_test_dsn, db_attempts=1)
    sink = make_sink(settings)
    drain(sink, kafka_bootstrap)
    committed_before = committed_offsets(kafka_bootstrap, settings.sink.consumer_group, topic)

    with psycopg.connect(postgres_test_dsn, autocommit=True) as conn:  # the database refuses the next batch
        conn.execute("CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$ "
                     "LANGUAGE plpgsql")
        conn.execute('CREATE TRIGGER refuse BEFORE INSERT ON "interactions_events" FOR EACH ROW '
                     "EXECUTE FUNCTION refuse()")
    produce(kafka_bootstrap, schema_registry_url, topic, second)
    with pytest.raises(SinkStoreError, match="disk full"):
        wait_until(lambda: sink.step() < 0, 30, "the sink fails on the refused batch")
    assert committed_offsets(kafka_bootstrap, settings.sink.consumer_group, topic) == committed_before
    sink.consumer.close()  # a crash: no close(), no final commit

    with psycopg.connect(postgres_test_dsn, autocommit=True) as conn:
        assert conn.execute('SELECT count(*) FROM "interactions_events"').fetchone() == (20,)
        conn.execute('DROP TRIGGER refuse ON "interactions_events"')
    restarted = make_sink(settings)
    drain(restarted, kafka_bootstrap)
    restarted.close()
    assert committed_offsets(kafka_bootstrap, settings.sink.consumer_group, topic) == end_offsets(
        kafka_bootstrap, topic)
    tables = snapshot(postgres_test_dsn, "interactions")
    assert len(tables["_events"]) == len(events) and len(tables[""]) == 10


def test_undecodable_records_are_kept_in_the_rejected_table(
        kafka_bootstrap: str, schema_registry_url: str, topic_factory: Callable[..., str],
        postgres_test_dsn: str) -> None:
    topic = topic_factory(partitions=1)
    produce(kafka_bootstrap, schema_registry_url, topic, interaction_events(1, 1, 2),
            raw=[(b"o:x", b"not avro"), (None, None)])
    sink = make_sink(settings_for(kafka_bootstrap, schema_registry_url, topic, postgres_test_dsn))
    drain(sink, kafka_bootstrap)
    assert sink.metrics.value("rekey_sink_rejected_total") == 2
    sink.close()
    with psycopg.connect(postgres_test_dsn) as conn:
        rejected = conn.execute('SELECT record_offset, record_value, error FROM "interactions_rejected" '
                                "ORDER BY record_offset").fetchall()
    assert [(offset, value) for offset, value, _ in rejected] == [(2, b"not avro"), (3, None)]
    assert "magic byte" in rejected[0][2].lower() or "wire" in rejected[0][2].lower()
    assert "tombstone" in rejected[1][2]

"""`rekey migrate consumers` and `rollback` against the real broker, registry, Spark backfill and live ACL: a plain
consumer group processes every valid source record the ACL published exactly once across its move (before on the
source, after on the family with `already_consumed`), per key in sequence order, and the re-delivery count the
command reports is what the filter drops."""

from __future__ import annotations

import uuid

import pytest

from kafka_rekey.services.migration import already_consumed, read_boundary
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
from tests.services.migration.conftest import (
    FAMILY,
    Stream,
    console_consumer_starts,
    consume,
    move,
    position,
    rekey,
)

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.registry]

HISTORY = 1500
LIVE = 1000


def _backfill(spark, stream: Stream) -> dict[str, dict[int, int]]:  # type: ignore[no-untyped-def]
    """The backfill of the stream's sources; their snapshot end offsets."""
    report = run_backfill(spark, BackfillRequest(stream.sources, FAMILY, stream.path),
                          KafkaSettings(bootstrap_servers=stream.bootstrap), RegistrySettings(url=stream.registry))
    return {snapshot["topic"]: {int(p): o for p, o in snapshot["end"].items()} for snapshot in report.snapshot}


def _on_the_family(stream: Stream, group: str, boundary: object, processed: dict[SourcePosition, int],
                   ) -> tuple[int, dict[tuple[str, str], list[int]]]:
    """Resume the group on the family's topics with the filter; (records dropped, seq per key in read order)."""
    dropped = 0
    order: dict[tuple[str, str], list[int]] = {}
    for message in consume(stream.bootstrap, group, stream.topics):
        if already_consumed(message, boundary):  # type: ignore[arg-type]
            dropped += 1
            continue
        headers = dict(message.headers() or [])
        source = SourcePosition.parse(headers["src"].decode())
        processed[source] = processed.get(source, 0) + 1
        order.setdefault((message.topic() or "", (message.key() or b"").decode()), []).append(int(headers["seq"]))
    return dropped, order


@pytest.mark.parametrize("case", ["behind", "inside", "two_sources"])
def test_a_group_moves_onto_the_family_exactly(  # type: ignore[no-untyped-def]
        spark, stream: Stream, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    genesys = next(s.name for s in stream.catalog.sources if s.format == "ccaas-json")
    crm = next(s.name for s in stream.catalog.sources if s.format == "debezium")
    stream.sources = [genesys, crm] if case == "two_sources" else [genesys]
    for number, source in enumerate(stream.sources):
        stream.generate(source, HISTORY, seed=10 + number)
    group = f"billing-{uuid.uuid4().hex[:8]}"
    processed: dict[SourcePosition, int] = {}
    if case != "behind":  # the group stops inside the history the backfill republishes
        for message in consume(stream.bootstrap, group, stream.sources, until=HISTORY // 2 * len(stream.sources)):
            processed[position(message)] = 1
    ends = _backfill(spark, stream)
    stream.start_acl()
    for number, source in enumerate(stream.sources):
        stream.generate(source, LIVE // 2, seed=20 + number)
    if case == "behind":  # the group read the history and the first live records; the ACL goes on without it
        history = sum(sum(partitions.values()) for partitions in ends.values())
        for message in consume(stream.bootstrap, group, stream.sources):
            processed[position(message)] = 1
        assert len(processed) >= history
    for number, source in enumerate(stream.sources):
        stream.generate(source, LIVE // 2, seed=30 + number)
    stream.drained()
    stream.verify(monkeypatch)

    code, output = rekey("migrate", "plan", "--source", genesys, "--family", FAMILY, "--watch", "1s",
                         "--acl-group", stream.acl_group, "-o", "json", *stream.options)
    assert code == 0, output
    assert '"can_move": true' in output and group in output, output
    result = move(stream, group, genesys)
    if case == "behind":  # a client that is not Python starts at the migrated positions too
        low = stream.catalog.family(FAMILY).tiers.low
        starts = {int(tp.rsplit("/", 1)[1]): o for tp, o in result["start_offsets"].items()
                  if tp.rsplit("/", 1)[0] == low}
        seen = console_consumer_starts(stream.bootstrap, group, low, records=5000)
        assert seen and all(seen[p] == starts[p] for p in seen), (seen, starts)

    published = stream.published()
    assert published and set(published.values()) == {1}, "the family holds every position once"
    before = {p for p in processed if p in published}
    boundary = read_boundary({"bootstrap.servers": stream.bootstrap}, stream.catalog.migrations_topic or "",
                             group, FAMILY)
    after: dict[SourcePosition, int] = {}
    dropped, order = _on_the_family(stream, group, boundary, after)

    assert not before & after.keys(), "a record processed on the source came again through the filter"
    assert before | after.keys() == set(published), "every published record is processed"
    assert set(after.values()) == {1}
    assert all(sequence == sorted(sequence) for sequence in order.values()), "per key in sequence order"
    assert dropped == result["redelivered"], result
    committed: dict[tuple[str, int], int] = {}
    for read in processed:
        committed[(read.topic, read.partition)] = max(read.offset + 1, committed.get((read.topic, read.partition), 0))
    inside_backfill = any(offset < ends[topic].get(partition, 0) for (topic, partition), offset in committed.items())
    assert inside_backfill == (case != "behind") or case == "two_sources", committed
    inside = [w for w in result["warnings"] if "inside the backfilled range" in w]
    assert bool(inside) == inside_backfill, result["warnings"]
    print(f"{case}: scanned {result['scanned']:,}, redelivered {result['redelivered']:,}, "
          f"new sources {result['new_sources']:,}, {result['seconds']} s")

    code, output = rekey("migrate", "status", "-o", "json", *stream.options)
    assert code == 0 and '"step": "moved"' in output, output


def test_a_group_rolled_back_reads_the_rest_on_the_source_exactly_once(  # type: ignore[no-untyped-def]
        spark, stream: Stream, monkeypatch: pytest.MonkeyPatch) -> None:
    genesys = next(s.name for s in stream.catalog.sources if s.format == "ccaas-json")
    stream.sources = [genesys]
    stream.generate(genesys, HISTORY, seed=41)
    _backfill(spark, stream)
    stream.start_acl()
    stream.generate(genesys, LIVE, seed=42)
    group = f"ledger-{uuid.uuid4().hex[:8]}"
    processed: dict[SourcePosition, int] = {}
    for message in consume(stream.bootstrap, group, [genesys], until=HISTORY + LIVE // 2):
        processed[position(message)] = 1
    stream.drained()
    stream.verify(monkeypatch)
    move(stream, group, genesys)
    published = stream.published()
    boundary = read_boundary({"bootstrap.servers": stream.bootstrap}, stream.catalog.migrations_topic or "",
                             group, FAMILY)
    on_family = 0
    for message in consume(stream.bootstrap, group, stream.topics, until=LIVE // 4):
        if not already_consumed(message, boundary):
            source = SourcePosition.parse(dict(message.headers() or [])["src"].decode())
            processed[source] = processed.get(source, 0) + 1
            on_family += 1
    assert on_family

    code, output = rekey("migrate", "rollback", "--group", group, "--family", FAMILY, "--acl-group", stream.acl_group,
                         "-o", "json", *stream.options)
    assert code == 0, output
    back = read_boundary({"bootstrap.servers": stream.bootstrap}, stream.catalog.migrations_topic or "", group,
                         FAMILY)
    for message in consume(stream.bootstrap, group, [genesys]):
        if not already_consumed(message, back):
            processed[position(message)] = processed.get(position(message), 0) + 1

    seen = {p: n for p, n in processed.items() if p in published}
    assert set(seen) == set(published) and set(seen.values()) == {1}, "every record exactly once across the moves"
    code, output = rekey("migrate", "status", "-o", "json", *stream.options)
    assert '"step": "rolled-back"' in output, output
    code, output = rekey("migrate", "consumers", "--group", group, "--source", genesys, "--family", FAMILY,
                         "--acl-group", stream.acl_group, "--dry-run", "-o", "json", *stream.options)
    assert code == 0, output

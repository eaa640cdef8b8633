"""The migration rules: consumed positions, start offsets on the family, the rollback and readiness."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.migration import (
    Consumed,
    SourceFacts,
    TargetScan,
    boundary_from_json,
    boundary_to_json,
    covers,
    plan_move,
    plan_rollback,
    readiness,
)
from kafka_rekey.shared.migration.positions import ranges
from kafka_rekey.shared.migration.rollback import rollback_offsets
from kafka_rekey.shared.sequencing import SourcePosition


def _at(offset: int, partition: int = 0, topic: str = "src") -> SourcePosition:
    return SourcePosition(topic, partition, offset)


def test_consumed_is_every_offset_below_and_the_ranges_beyond() -> None:
    consumed = Consumed(10, ((12, 14), (20, 21)))

    assert [offset for offset in range(25) if consumed.covers(offset)] == [*range(10), 12, 13, 20]
    boundary = {("src", 0): consumed}
    assert covers(boundary, _at(13)) and not covers(boundary, _at(14)) and not covers(boundary, _at(0, 1))
    assert boundary_from_json(boundary_to_json(boundary)) == boundary
    assert ranges([5, 3, 4, 9, 4]) == ((3, 6), (9, 10))


def test_the_start_is_the_first_unconsumed_record_and_what_follows_is_counted() -> None:
    boundary = {("src", 0): Consumed(100), ("src", 1): Consumed(50)}
    scan = TargetScan("family_v2", 3)
    for offset, position in enumerate([_at(10), _at(60, 1), _at(99), _at(100), _at(20, 1), _at(5, 2), _at(120)]):
        scan.add(offset, position, boundary)

    assert (scan.start_offset, scan.redelivered, scan.new_sources, scan.records) == (1, 2, 1, 7)
    assert plan_move([scan]).start_offsets == {("family_v2", 3): 1}


def test_a_partition_the_group_consumed_whole_starts_at_its_end() -> None:
    scan = TargetScan("family_v2", 0)
    for offset in range(5):
        scan.add(offset, _at(offset), {("src", 0): Consumed(10)})

    assert scan.start_offset == 5 and scan.redelivered == 0


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 40)), max_size=60), st.integers(0, 40),
       st.integers(0, 40))
def test_every_record_before_the_start_was_consumed_and_the_one_at_it_was_not(
        records: list[tuple[int, int]], first: int, second: int) -> None:
    boundary = {("src", 0): Consumed(first), ("src", 1): Consumed(second)}
    scan = TargetScan("t", 0)
    for offset, (partition, source_offset) in enumerate(records):
        scan.add(offset, _at(source_offset, partition), boundary)

    positions = [_at(source_offset, partition) for partition, source_offset in records]
    assert all(covers(boundary, position) for position in positions[:scan.start_offset])
    if scan.start_offset < len(records):
        assert not covers(boundary, positions[scan.start_offset])
    assert scan.redelivered == sum(covers(boundary, position) for position in positions[scan.start_offset:])


def test_the_rollback_takes_the_smallest_unconsumed_source_offset_never_past_the_acl() -> None:
    offsets = rollback_offsets({("src", 0): 40, ("src", 1): 70}, {("src", 0): 55, ("src", 1): 60, ("src", 2): 9,
                                                                   ("src", 3): -1001})

    assert offsets == {("src", 0): 40, ("src", 1): 60, ("src", 2): 9}
    plan = plan_rollback(offsets, [(("src", 0), 39), (("src", 0), 41), (("src", 0), 42), (("src", 1), 65)])
    assert plan.boundary[("src", 0)] == Consumed(40, ((41, 43),))
    assert plan.boundary[("src", 1)] == Consumed(60, ((65, 66),)) and plan.redelivered == 3


def test_readiness_names_each_reason() -> None:
    source = SourceFacts("src", group={0: 100, 1: 50}, acl={0: 90, 1: 80}, backfill="data_written")

    verdict = readiness([source], in_flight=3, verified=False)

    assert not verdict.ready and verdict.acl_behind == 10
    assert verdict.reasons == (
        "the backfill of src is data_written, not complete",
        "the ACL is 10 records behind the group on src (partitions 0)",
        "the sequencing stage holds 3 records not yet in the family",
        "the last `rekey verify` of the source and family found mismatches",
    )
    ready = readiness([SourceFacts("src", {0: 100}, {0: 100}, "complete")], in_flight=0, verified=True)
    assert ready.ready and ready.reasons == ()
    assert "no `rekey verify`" in readiness([SourceFacts("src", {}, {}, None)], 0, None).reasons[0]

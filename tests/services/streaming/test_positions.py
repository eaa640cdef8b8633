"""Which records are refetched: a delivered record past the expected offset once, a real hole never twice, and
every fetched record that was not delivered."""

from __future__ import annotations

from faust.types import TP

from services.streaming.positions import FetchPositions, first_undelivered

SOURCE = TP("interactions", 0)
OTHER = TP("interactions", 1)


def _deliver(positions: FetchPositions, tp: TP, offsets: range | list[int]) -> list[int | None]:
    return [positions.refetch_offset(tp, offset) for offset in offsets]


def test_contiguous_records_after_the_seek_are_all_delivered() -> None:
    positions = FetchPositions()
    positions.sought({SOURCE: 600})

    assert _deliver(positions, SOURCE, range(600, 700)) == [None] * 100
    assert positions.expected[SOURCE] == 700


def test_first_record_past_the_committed_offset_is_refetched_from_it() -> None:
    # The diagnosed loss: committed 600, the first record delivered after the restart was the log end, 868.
    positions = FetchPositions()
    positions.sought({SOURCE: 600})

    assert positions.refetch_offset(SOURCE, 868) == 600
    assert positions.expected[SOURCE] == 600
    assert _deliver(positions, SOURCE, range(600, 869)) == [None] * 269


def test_a_hole_in_the_middle_of_the_stream_is_refetched() -> None:
    positions = FetchPositions()
    positions.sought({SOURCE: 0})
    _deliver(positions, SOURCE, range(0, 10))

    assert positions.refetch_offset(SOURCE, 15) == 10


def test_the_same_jump_after_a_refetch_is_a_real_hole_and_delivered() -> None:
    # Offsets 10-14 hold no records (a transaction marker and aborted records of a transactional source).
    positions = FetchPositions()
    positions.sought({SOURCE: 0})
    _deliver(positions, SOURCE, range(0, 10))

    assert positions.refetch_offset(SOURCE, 15) == 10
    assert positions.refetch_offset(SOURCE, 15) is None
    assert positions.expected[SOURCE] == 16


def test_a_later_hole_is_refetched_again() -> None:
    positions = FetchPositions()
    positions.sought({SOURCE: 0})
    positions.refetch_offset(SOURCE, 5)
    positions.refetch_offset(SOURCE, 5)

    assert positions.refetch_offset(SOURCE, 9) == 6


def test_partition_without_committed_offset_expects_nothing_until_its_first_record() -> None:
    positions = FetchPositions()
    positions.sought({SOURCE: 600})
    positions.sought({SOURCE: None, OTHER: 3})

    assert positions.refetch_offset(SOURCE, 42) is None
    assert positions.refetch_offset(SOURCE, 44) == 43
    assert positions.refetch_offset(OTHER, 3) is None


def test_a_seek_forgets_pending_refetches() -> None:
    positions = FetchPositions()
    positions.sought({SOURCE: 0})
    positions.refetch_offset(SOURCE, 5)
    positions.sought({SOURCE: 0})

    assert positions.refetch_offset(SOURCE, 5) == 0


def test_a_record_before_the_expected_offset_does_not_move_it_back() -> None:
    positions = FetchPositions()
    positions.sought({SOURCE: 10})

    assert positions.refetch_offset(SOURCE, 7) is None
    assert positions.expected[SOURCE] == 10


def test_a_batch_dropped_whole_is_refetched_from_its_first_record() -> None:
    # The restarted-worker stall: the second batch, offsets 250-521, fetched and none of it delivered.
    assert first_undelivered({SOURCE: list(range(250, 522))}, {}) == {SOURCE: 250}


def test_a_batch_cut_short_is_refetched_after_the_last_delivered_record() -> None:
    assert first_undelivered({SOURCE: list(range(0, 10)), OTHER: [4, 5]}, {SOURCE: 6, OTHER: 5}) == {SOURCE: 7}


def test_a_batch_delivered_whole_needs_no_refetch() -> None:
    assert first_undelivered({SOURCE: [3, 4, 5]}, {SOURCE: 5}) == {}


def test_a_rewind_expects_the_first_undelivered_record() -> None:
    positions = FetchPositions()
    positions.sought({SOURCE: 0})
    _deliver(positions, SOURCE, range(0, 5))
    positions.rewound(SOURCE, 5)

    assert positions.refetch_offset(SOURCE, 5) is None
    assert positions.refetch_offset(SOURCE, 8) == 6

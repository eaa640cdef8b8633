"""`sequence_step`: the live sequencer's rules as a pure function, and a replay of a key's stream through it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.sequencing import Duplicate, Fresh, Redelivered, SeenEntry, sequence_step


def test_first_event_of_a_key_continues_from_the_handoff() -> None:
    step = sequence_step(None, 41, None, "src/0/7")
    assert step.decision == Fresh(42)
    assert (step.last, step.seen) == (42, SeenEntry(42, "src/0/7"))


def test_known_key_takes_the_next_sequence_whatever_the_handoff_says() -> None:
    assert sequence_step(5, 41, None, "src/0/8").decision == Fresh(6)


def test_redelivery_keeps_its_first_sequence_and_changes_nothing() -> None:
    step = sequence_step(9, 0, SeenEntry(4, "src/1/3"), "src/1/3")
    assert step.decision == Redelivered(4)
    assert (step.last, step.seen) == (None, None)


def test_upstream_duplicate_is_dropped_and_changes_nothing() -> None:
    step = sequence_step(9, 0, SeenEntry(4, "src/1/3"), "src/2/11")
    assert step.decision == Duplicate(4, "src/1/3")
    assert (step.last, step.seen) == (None, None)


@given(st.lists(st.tuples(st.integers(0, 15), st.integers(0, 3)), max_size=60), st.integers(0, 100))
def test_a_replayed_stream_gets_dense_sequences_and_redeliveries_their_first_number(
        stream: list[tuple[int, int]], handoff: int) -> None:
    """Events (dedupe id, source partition) of one key, some repeated: state kept as the runtime keeps it."""
    last: int | None = None
    seen: dict[int, SeenEntry] = {}
    emitted: list[tuple[int, int]] = []
    for dedupe_id, partition in stream:
        source = f"src/{partition}/{dedupe_id}"
        step = sequence_step(last, handoff, seen.get(dedupe_id), source)
        if step.last is not None:
            last = step.last
        if step.seen is not None:
            seen[dedupe_id] = step.seen
        if not isinstance(step.decision, Duplicate):
            emitted.append((dedupe_id, step.decision.sequence))
    first_numbers = {}
    for dedupe_id, sequence in emitted:
        first_numbers.setdefault(dedupe_id, sequence)
        assert first_numbers[dedupe_id] == sequence
    assert sorted(first_numbers.values()) == list(range(handoff + 1, handoff + 1 + len(first_numbers)))

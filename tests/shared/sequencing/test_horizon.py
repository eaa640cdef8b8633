"""The sequences horizon's rules: when a key is idle, where its forgotten record lives, what its next event
continues from."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.sequencing import sequence_step
from kafka_rekey.shared.sequencing.horizon import (
    DAY_MS,
    FORGOTTEN_PREFIX,
    KeyState,
    continued_from,
    forgotten_key,
    is_forgotten_record,
    is_idle,
)

NOW = 1_764_200_000_000


def test_a_key_is_idle_only_past_the_horizon() -> None:
    assert not is_idle(KeyState(3, NOW - 30 * DAY_MS), NOW, 30 * DAY_MS)
    assert is_idle(KeyState(3, NOW - 30 * DAY_MS - 1), NOW, 30 * DAY_MS)
    assert not is_idle(KeyState(3, NOW + 5_000), NOW, 30 * DAY_MS), "a clock behind the writer's forgets nothing"


def test_state_written_before_the_horizon_existed_counts_as_idle() -> None:
    """Its key is forgotten at the first sweep, with its last sequence kept: nothing lost."""
    assert is_idle(KeyState(3, None), NOW, 30 * DAY_MS)


def test_a_forgotten_record_has_a_short_key_of_its_own_that_no_output_key_starts_with() -> None:
    key = b"interaction_events_high_v2/org-acme:0123456789abcdef"
    record = forgotten_key(key)
    assert record.startswith(FORGOTTEN_PREFIX) and is_forgotten_record(record) and not is_forgotten_record(key)
    assert len(record) < len(key) and record == forgotten_key(key) != forgotten_key(key + b"0")


def test_the_next_event_continues_from_the_state_else_the_forgotten_record_else_the_handoff() -> None:
    assert continued_from(KeyState(7, NOW), 4, 2) == 7
    assert continued_from(None, 4, 2) == 4
    assert continued_from(None, None, 2) is None, "the caller continues from the hand-off, as for any new key"


@given(st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=40),
       st.integers(min_value=0, max_value=5))
def test_a_key_forgotten_between_any_of_its_events_is_numbered_densely(gaps_days: list[int],
                                                                      handoff_last: int) -> None:
    """Events of one key `gaps_days` apart, forgotten whenever idle past a 30-day horizon: 1..n after the
    hand-off value, never a restart."""
    idle_ms, now = 30 * DAY_MS, NOW
    state: KeyState | None = None
    forgotten: int | None = None
    numbers = []
    for event, gap in enumerate(gaps_days):
        now += gap * DAY_MS
        if state is not None and is_idle(state, now, idle_ms):
            state, forgotten = None, state.last
        step = sequence_step(continued_from(state, forgotten, handoff_last), handoff_last, None, f"src/0/{event}")
        assert step.last is not None
        numbers.append(step.last)
        state = KeyState(step.last, now)
    assert numbers == list(range(handoff_last + 1, handoff_last + 1 + len(gaps_days)))

"""The liveness rule: a turning loop or a progressing restore is alive; an idle loop or a stalled restore is not."""

from __future__ import annotations

from kafka_rekey.shared.liveness import LivenessLimits, unhealthy_reason

LIMITS = LivenessLimits(loop_s=120, restore_stall_s=60)


def test_a_loop_that_turned_within_the_limit_is_alive() -> None:
    assert unhealthy_reason(1_000, 900, False, 0, LIMITS) is None


def test_a_loop_idle_past_the_limit_is_not_and_says_for_how_long() -> None:
    assert unhealthy_reason(1_000, 870, False, 0, LIMITS) == "the loop has not turned for 130s (REKEY_LIVENESS_S=120)"


def test_a_restore_longer_than_the_loop_limit_is_alive_while_it_reads() -> None:
    assert unhealthy_reason(10_000, 1_000, True, 9_990, LIMITS) is None


def test_a_restore_that_read_nothing_past_the_stall_limit_is_not() -> None:
    reason = unhealthy_reason(10_000, 9_000, True, 9_900, LIMITS)
    assert reason == "the restore has read nothing for 100s (REKEY_RESTORE_STALL_S=60)"

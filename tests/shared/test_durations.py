"""Durations and instants on the command line: one syntax for every `--window`, one for every time option."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.durations import parse_duration_ms, parse_instant


@pytest.mark.parametrize(("text", "millis"), [("30s", 30_000), ("15m", 900_000), ("1h", 3_600_000),
                                              ("2d", 172_800_000), ("3600", 3_600_000), (" 5 m ", 300_000)])
def test_durations(text: str, millis: int) -> None:
    assert parse_duration_ms(text) == millis


@pytest.mark.parametrize("text", ["0", "0h", "1w", "h", "-1h", "1.5h", ""])
def test_a_bad_duration_names_the_option(text: str) -> None:
    with pytest.raises(ValueError, match=r"^--since-window expects a duration such as 30s, 15m, 1h, 1d"):
        parse_duration_ms(text, "--since-window")


INSTANT = 1_764_208_800_000  # 2025-11-27T02:00:00Z


def test_instants() -> None:
    assert parse_instant("2025-11-27T02:00:00Z", "--since") == INSTANT
    assert parse_instant("2025-11-27T03:00:00+01:00", "--since") == INSTANT
    assert parse_instant("2025-11-27", "--since") == INSTANT - 2 * 3_600_000
    assert parse_instant(str(INSTANT), "--since") == INSTANT
    with pytest.raises(ValueError, match=r"^--until expects ISO-8601 with an offset .*got '2025-11-27T02:00'$"):
        parse_instant("2025-11-27T02:00", "--until")
    with pytest.raises(ValueError, match=r"got 'yesterday'"):
        parse_instant("yesterday", "--since")

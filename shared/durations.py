"""Durations as the command line takes them (`30s`, `15m`, `1h`, `1d`, or a bare number of seconds), and
instants (ISO-8601 with an offset, a date, or epoch milliseconds)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_MILLIS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"\s*(\d+)\s*([smhd]?)\s*")


def parse_duration_ms(text: str, option: str = "--window") -> int:
    """Milliseconds in `text`; a positive duration, or a ValueError naming `option` and what it expects."""
    match = _DURATION.fullmatch(text)
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"{option} expects a duration such as 30s, 15m, 1h, 1d (or seconds); got {text!r}")
    return int(match.group(1)) * _MILLIS[match.group(2) or "s"]


def parse_instant(text: str, option: str) -> int:
    """Epoch milliseconds of `text`: ISO-8601 with an offset (`2026-11-27T02:00:00Z`), a date (midnight UTC) or
    epoch milliseconds; a ValueError naming `option` if it is none of them."""
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError:
        parsed = None
    if parsed is None or (parsed.tzinfo is None and "T" in stripped):
        raise ValueError(f"{option} expects ISO-8601 with an offset (2026-11-27T02:00:00Z), a date (2026-11-27) "
                         f"or epoch milliseconds; got {text!r}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)

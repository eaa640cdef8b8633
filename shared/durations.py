"""Durations as the command line takes them: `30s`, `15m`, `1h`, `1d`, or a bare number of seconds."""

from __future__ import annotations

import re

_MILLIS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"\s*(\d+)\s*([smhd]?)\s*")


def parse_duration_ms(text: str, option: str = "--window") -> int:
    """Milliseconds in `text`; a positive duration, or a ValueError naming `option` and what it expects."""
    match = _DURATION.fullmatch(text)
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"{option} expects a duration such as 30s, 15m, 1h, 1d (or seconds); got {text!r}")
    return int(match.group(1)) * _MILLIS[match.group(2) or "s"]

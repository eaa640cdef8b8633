"""Deadline-bounded polling for tests: never a bare sleep, always a clear message when time runs out."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float, message: str, interval: float = 0.2) -> T:
    """Call `check` until it returns something truthy, and return that; fail with `message` at the deadline."""
    deadline = time.monotonic() + timeout
    last: T = check()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s: {message} (last: {last!r})")
        time.sleep(interval)
        last = check()
    return last

"""Waiting for a condition of the development tools' running stack, with a deadline and polling."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2,
             error: type[Exception] = TimeoutError) -> None:
    """Poll `condition` until it holds; `error` naming `what` once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise error(f"{what}: not reached within {timeout:.0f}s")
        time.sleep(interval)

"""The workers' own view for `rekey status --worker HOST:PORT`: ready, or restoring state with the changelog records
read and to read (what a worker's `/readyz` answers while it restores), so an operator sees a restore advance."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

_RESTORING = re.compile(r"restoring state: ([\d,]+) of ([\d,]+) changelog records read")


@dataclass(frozen=True)
class WorkerState:
    address: str
    """HOST:PORT of the worker's web port (`REKEY_WEB_PORT`)."""
    ready: bool
    restore_read: int | None = None
    restore_to_read: int | None = None
    """Changelog records of the restores under way: read so far and in all (None: not restoring)."""
    detail: str = ""
    """Why it is not ready, as it says, or why it could not be asked."""


def worker_state(address: str, timeout: float = 2.0) -> WorkerState:
    """Ask one worker's `/readyz`."""
    try:
        answer = httpx.get(f"http://{address}/readyz", timeout=timeout)
    except httpx.HTTPError as error:
        return WorkerState(address, False, detail=f"unreachable: {error}")
    if answer.status_code == 200:
        return WorkerState(address, True)
    said = answer.text.strip().removeprefix("not ok").lstrip(": ")
    restoring = _RESTORING.search(said)
    if restoring is None:
        return WorkerState(address, False, detail=said or f"HTTP {answer.status_code}")
    read, to_read = (int(number.replace(",", "")) for number in restoring.groups())
    return WorkerState(address, False, read, to_read, said)

"""Process and port helpers for embedded servers run as detached process groups on 127.0.0.1."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import time
from pathlib import Path

# Loaded at import, never between fork and exec (see `terminate_with_parent`).
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_PR_SET_PDEATHSIG = 1


def port_free(port: int) -> bool:
    """True when nothing listens on (and nothing holds) `port` on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_open(port: int) -> bool:
    """True when something accepts connections on `port` on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def free_port(start: int) -> int:
    """The first free port at or above `start`."""
    for port in range(start, 65000):
        if port_free(port):
            return port
    raise OSError(f"no free port on 127.0.0.1 at or above {start}")


def alive(pid: int) -> bool:
    """True while process `pid` runs (a zombie child of ours is reaped and counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def stop_group(pid: int, timeout: float) -> None:
    """SIGTERM the process group led by `pid`, then SIGKILL it if it is still alive after `timeout` seconds."""
    if not alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)


def tail(path: Path, lines: int) -> str:
    """The last `lines` lines of a text file, or '' when it does not exist yet."""
    if not path.exists():
        return ""
    return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])


def terminate_with_parent() -> None:
    """A `preexec_fn` for servers owned by a test session: Linux sends the child SIGTERM when the thread that
    started it dies (PR_SET_PDEATHSIG), so a killed pytest leaves no orphaned JVM behind."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

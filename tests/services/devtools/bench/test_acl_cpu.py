"""The ACL bench's CPU accounting: user + system seconds read from /proc for the processes it names."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from services.devtools.bench.acl import _broker_pids, _cpu_seconds


def test_cpu_seconds_grow_with_the_work_a_process_does() -> None:
    before = _cpu_seconds([os.getpid()])
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert _cpu_seconds([os.getpid()]) - before >= 0.2


def test_a_process_that_is_gone_counts_nothing() -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    assert _cpu_seconds([int(gone.stdout)]) == 0.0


def test_brokers_are_found_by_the_directory_on_their_command_line(tmp_path: Path) -> None:
    stack = tmp_path / "stack"
    named = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "kafka.Kafka", str(stack)])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "kafka.Kafka", str(tmp_path)])
    try:
        assert _broker_pids(stack) == [named.pid]
    finally:
        named.kill()
        other.kill()

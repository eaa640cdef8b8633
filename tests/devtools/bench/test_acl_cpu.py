"""The ACL bench's CPU accounting: user + system seconds read from /proc for the processes it names."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from kafka_rekey_dev.bench.acl import JIT_THREADS, _broker_pids, _cpu_seconds


def test_cpu_seconds_grow_with_the_work_a_process_does() -> None:
    before = _cpu_seconds([os.getpid()])
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert _cpu_seconds([os.getpid()]) - before >= 0.2


def test_only_the_threads_named_like_the_jit_compilers_count_when_asked() -> None:
    named, spinning, measured = threading.Event(), threading.Event(), threading.Event()

    def spin() -> None:
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text("C2 CompilerThre")
        named.set()
        deadline = time.thread_time() + 0.3
        while time.thread_time() < deadline:
            pass
        spinning.set()
        measured.wait(30)  # a thread that has ended is no longer in /proc

    before = _cpu_seconds([os.getpid()], JIT_THREADS)
    other_before = _cpu_seconds([os.getpid()], re.compile("no thread is named so"))
    thread = threading.Thread(target=spin)
    thread.start()
    assert named.wait(10)
    assert spinning.wait(30)
    assert _cpu_seconds([os.getpid()], JIT_THREADS) - before >= 0.2
    measured.set()
    thread.join()
    assert _cpu_seconds([os.getpid()], re.compile("no thread is named so")) == other_before == 0.0


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

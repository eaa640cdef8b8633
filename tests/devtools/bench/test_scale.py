"""The scale run's sampling (`kafka_rekey_dev.bench.scale`) on real processes: a process tree's peak RSS and a scratch
directory's size, as the 10M-record soak reports them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_rekey_dev.bench.scale import TreeSampler, directory_bytes, process_label, process_tree
from kafka_rekey_dev.waiting import wait_for

# A parent that holds ~64 MB and a child of it that holds ~32 MB, until stdin closes.
_TREE = """
import subprocess, sys
held = b"x" * (64 * 2**20)
child = subprocess.Popen([sys.executable, "-c", "import sys; held = b'x' * (32 * 2**20); print(flush=True); "
                          "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
sys.stdin.read()
child.stdin.close()
child.wait()
"""


def test_the_sampler_sees_each_process_of_the_tree_and_the_scratch_directory(tmp_path: Path) -> None:
    (tmp_path / "spill").mkdir()
    (tmp_path / "spill" / "shuffle_0.data").write_bytes(b"x" * 300_000)
    root = subprocess.Popen([sys.executable, "-c", _TREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout is not None
        child = int(root.stdout.readline())
        wait_for(lambda: child in process_tree(root.pid), 10, "the child in the root's tree")
        sampler = TreeSampler(root.pid, tmp_path)
        sampler.sample()
        assert process_tree(root.pid) >= {root.pid, child}
        assert process_label(root.pid, root.pid) == "driver (Python)"
        assert process_label(child, root.pid) == "Python worker"  # a Python child of a Python process
        peaks = {pid: kib for pid, (_label, kib) in sampler.peak_kib.items()}
        assert peaks[root.pid] > 64 * 1024 and peaks[child] > 32 * 1024
        assert sampler.peak_total_kib >= peaks[root.pid] + 32 * 1024
        assert sampler.peak_mb_by_label()["driver (Python)"] > 64
        assert sampler.peak_scratch_bytes == directory_bytes(tmp_path) >= 300_000
    finally:
        assert root.stdin is not None
        root.stdin.close()
        root.wait(10)
    assert directory_bytes(tmp_path / "absent") == 0

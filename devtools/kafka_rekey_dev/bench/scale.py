"""The backfill at history scale in bounded memory, for `rekey bench backfill --scale-events N`: `rekey backfill` in a
process of its own (so that its JVM starts with the memory given), every process of its tree sampled for its peak
RSS, and its Spark scratch directory (`spark.local.dir`, where the shuffle spills) for the disk it takes.

In `local[*]` the driver and the executors are one JVM: the memory given is that JVM's heap
(`spark.driver.memory`), and `spark.executor.memory` is set to the same for a cluster master.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafka_rekey.services.settings import KafkaSettings, RegistrySettings

SAMPLE_SECONDS = 1.0
PROGRESS_SECONDS = 30.0


def process_tree(root: int) -> set[int]:
    """`root` and every live descendant of it, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    tree, frontier = set(), [root]
    while frontier:
        pid = frontier.pop()
        tree.add(pid)
        frontier.extend(child for child, parent in parents.items() if parent == pid and child not in tree)
    return tree


def _program(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return b""


def process_label(pid: int, root: int) -> str | None:
    """What a process of the backfill's tree is: `driver (Python)`, `JVM`, `Python daemon` (a child of the JVM) or
    `Python worker` (forked by the daemon); None for anything else (a shell) or a process gone."""
    if pid == root:
        return "driver (Python)"
    program = _program(pid)
    if program.endswith(b"java"):
        return "JVM"
    if b"python" not in program:
        return None
    try:
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return "Python daemon" if _program(parent).endswith(b"java") else "Python worker"


def _kib(pid: int, field_name: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def directory_bytes(path: Path) -> int:
    """Bytes of the files under `path` (0 if it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                continue  # removed meanwhile
    return total


@dataclass
class TreeSampler:
    """Peak RSS of each process of a tree (its VmHWM, last seen), the peak of their sum, and the peak size of a
    scratch directory, sampled until `stop`."""

    root: int
    scratch: Path
    peak_kib: dict[int, tuple[str, int]] = field(default_factory=dict)
    peak_total_kib: int = 0
    peak_scratch_bytes: int = 0
    total_kib: int = 0
    scratch_bytes: int = 0

    def sample(self) -> None:
        total = 0
        for pid in process_tree(self.root):
            label = process_label(pid, self.root)
            if label is None:
                continue
            total += _kib(pid, "VmRSS:")
            peak = _kib(pid, "VmHWM:")
            if peak > self.peak_kib.get(pid, (label, 0))[1]:
                self.peak_kib[pid] = (label, peak)
        self.total_kib = total
        self.peak_total_kib = max(self.peak_total_kib, total)
        self.scratch_bytes = directory_bytes(self.scratch)
        self.peak_scratch_bytes = max(self.peak_scratch_bytes, self.scratch_bytes)

    def peak_mb_by_label(self) -> dict[str, float]:
        """The highest peak RSS among the processes of each label, in MB."""
        peaks: dict[str, float] = {}
        for label, kib in self.peak_kib.values():
            peaks[label] = max(peaks.get(label, 0.0), round(kib / 1024, 1))
        return peaks

    def python_workers(self) -> int:
        return sum(1 for label, _ in self.peak_kib.values() if label == "Python worker")


@dataclass
class ScaleOutcome:
    events: int
    seconds: float
    written: int
    memory: str
    peak_rss_mb: dict[str, float]
    peak_total_rss_mb: float
    python_workers: int
    peak_spill_mb: float

    @property
    def peak_process_rss_mb(self) -> float:
        return max(self.peak_rss_mb.values(), default=0.0)


def _lines(stream: Iterator[str], echo: Callable[[str], None], kept: list[str]) -> None:
    for line in stream:
        kept.append(line)
        echo(line.rstrip())


def run_at_scale(*, kafka: KafkaSettings, registry: RegistrySettings, source: str, family: str, catalog: Path,
                 events: int, memory: str, work: Path, echo: Callable[[str], None]) -> ScaleOutcome:
    """`rekey backfill` of `source` (holding `events` records) into the family of `catalog`, its JVM at `memory`."""
    scratch = work / "spark-local"
    scratch.mkdir(parents=True, exist_ok=True)
    report = work / "scale-report.json"
    command = [str(Path(sys.executable).with_name("rekey")), "backfill", "--source", source, "--target-family", family,
               "--catalog", str(catalog), "--bootstrap-servers", kafka.bootstrap_servers, "--report", str(report),
               "--conf", f"spark.driver.memory={memory}", "--conf", f"spark.executor.memory={memory}",
               "--conf", f"spark.local.dir={scratch}", "--conf", "spark.ui.showConsoleProgress=false"]
    env = {**os.environ, "REKEY_REGISTRY_URL": registry.url}
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    output: list[str] = []
    reader = threading.Thread(target=_lines, args=(process.stdout, echo, output), daemon=True)
    reader.start()
    sampler = TreeSampler(process.pid, scratch)
    next_progress = started + PROGRESS_SECONDS
    while process.poll() is None:
        sampler.sample()
        if time.monotonic() >= next_progress:
            next_progress += PROGRESS_SECONDS
            echo(f"  scale run: {time.monotonic() - started:6.0f} s, RSS of its processes now "
                 f"{sampler.total_kib / 1024:,.0f} MB, spill {sampler.scratch_bytes / 2**20:,.0f} MB")
        time.sleep(SAMPLE_SECONDS)
    seconds = time.monotonic() - started
    reader.join(10)
    if process.returncode != 0:
        tail = "".join(output[-20:])
        raise RuntimeError(f"the {events:,}-record backfill exited with {process.returncode}:\n{tail}")
    written = int(json.loads(report.read_text())["written"])
    shutil.rmtree(scratch, ignore_errors=True)
    return ScaleOutcome(events, round(seconds, 1), written, memory, sampler.peak_mb_by_label(),
                        round(sampler.peak_total_kib / 1024, 1), sampler.python_workers(),
                        round(sampler.peak_scratch_bytes / 2**20, 1))

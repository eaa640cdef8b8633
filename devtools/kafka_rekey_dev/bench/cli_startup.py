"""`rekey bench cli`: how long the CLI takes to answer, from process start to exit, against the interpreter's own
start-up measured in the same run (the floor no command can go under).

Every command is run `runs` times in a fresh process, alternating with the others so that a burst of load hits
them all alike, with its bytecode cached as an installed package has it; the median is the figure, the slowest
run is shown beside it. Command imports are lazy (services/cli): `--help` and `rekey partition` must not pay
for pyspark, matplotlib or the runtime.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rich.table import Table

from kafka_rekey_dev.bench.document import replace_section
from kafka_rekey_dev.embedded.maven import REPO_ROOT

DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
SECTION = "## CLI start-up (rekey bench cli)"
TARGET_SECONDS = 0.3
"""What `rekey --help` and `rekey partition` may take (issue 20)."""


@dataclass
class Timing:
    name: str
    argv: list[str]
    target: float | None
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def met(self) -> str:
        if self.target is None:
            return "baseline"
        return "met" if self.median <= self.target else "NOT met"


def timings() -> list[Timing]:
    python = sys.executable
    rekey = str(Path(python).with_name("rekey"))
    return [
        Timing("python -c pass (interpreter start)", [python, "-c", "pass"], None),
        Timing("python -c 'import confluent_kafka'", [python, "-c", "import confluent_kafka"], None),
        Timing("rekey --help", [rekey, "--help"], TARGET_SECONDS),
        Timing("rekey --version", [rekey, "--version"], TARGET_SECONDS),
        Timing("rekey partition org-1:i-9 --partitions 12", [rekey, "partition", "org-1:i-9", "--partitions", "12"],
               TARGET_SECONDS),
    ]


def measure(runs: int, progress: bool = True) -> list[Timing]:
    """Time each command `runs` times after one uncounted run that writes its bytecode: an installed package has
    its `.pyc` files, a checkout run under `PYTHONDONTWRITEBYTECODE` would compile every module at every start."""
    measured = timings()
    with tempfile.TemporaryDirectory(prefix="rekey-bench-cli-") as cache:
        env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        quietly = partial(subprocess.run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        for timing in measured:
            quietly(timing.argv)
        for run in range(runs):
            for timing in measured:
                started = time.perf_counter()
                quietly(timing.argv)
                timing.seconds.append(time.perf_counter() - started)
            if progress:
                print(f"\rrun {run + 1}/{runs}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return measured


def rows(measured: list[Timing]) -> list[tuple[str, str, str, str, str]]:
    """command, median, slowest, target, verdict: the same cells on the terminal and in the document."""
    return [(timing.name, f"{timing.median:.3f}", f"{max(timing.seconds):.3f}",
             "" if timing.target is None else f"<= {timing.target:.2f}", timing.met) for timing in measured]


def table(measured: list[Timing]) -> Table:
    result = Table(title="rekey bench cli: seconds from process start to exit")
    for header in ("command", "median", "slowest", "target", "verdict"):
        result.add_column(header, justify="left" if header == "command" else "right")
    for row in rows(measured):
        result.add_row(*row)
    return result


def markdown(measured: list[Timing], runs: int, load: tuple[float, float, float]) -> str:
    lines = [
        SECTION, "",
        f"Measured {dt.date.today().isoformat()} with `rekey bench cli --runs {runs}`: each command {runs} times "
        f"in a fresh process, the median and the slowest. Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load average at the start {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} (1/5/15 min).", "",
        "| command | median s | slowest s | target s | verdict |", "| --- | --- | --- | --- | --- |",
    ]
    lines += [f"| `{name}` | {' | '.join(cells)} |" for name, *cells in rows(measured)]
    return "\n".join(lines) + "\n"


def run_bench(runs: int, record: bool, doc: Path = DOC) -> list[Timing]:
    from kafka_rekey.services.console import make_console

    console = make_console()
    load = os.getloadavg()
    console.print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    measured = measure(runs)
    console.print(table(measured))
    if record:
        replace_section(doc, SECTION, markdown(measured, runs, load))
        console.print(f"[green]✓[/] recorded in {doc}")
    return measured

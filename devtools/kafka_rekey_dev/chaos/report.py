"""Show a chaos run as a rich table, and keep its figures as one row per (scenario, guarantee, scale) in
docs/RELIABILITY.md (between the figure markers; a new run of the same row replaces it)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kafka_rekey_dev.chaos.harness import ChaosResult
from kafka_rekey_dev.embedded.maven import REPO_ROOT

RELIABILITY = REPO_ROOT / "docs" / "RELIABILITY.md"
BEGIN, END = "<!-- chaos-figures:begin -->", "<!-- chaos-figures:end -->"
HEADER = ("| scenario | guarantee | scale | records sent | keys | faults injected | lost | out of order | gaps "
          "| duplicates | time to recover | status | run |")
RULE = "|" + " --- |" * HEADER.count(" | ") + " --- |"


def figures(result: ChaosResult) -> dict[str, str]:
    recover = result.recover_seconds
    return {
        "scenario": result.scenario,
        "guarantee": result.guarantee,
        "scale": f"{result.events:,} events",
        "records sent": f"{result.records_sent:,}",
        "keys": f"{result.keys:,}",
        "faults injected": "; ".join(f.name for f in result.faults) or "none",
        "lost": f"{result.total('lost'):,}",
        "out of order": f"{result.total('out_of_order'):,}",
        "gaps": f"{result.total('gaps'):,}",
        "duplicates": f"{result.total('duplicates'):,}",
        "time to recover": f"{recover:.1f} s" if recover is not None else "-",
        "status": result.status,
    }


def print_result(result: ChaosResult, console: Console) -> None:
    table = Table(title=f"rekey chaos {result.scenario} ({result.guarantee}, {result.events:,} events)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in figures(result).items():
        if name not in ("scenario", "guarantee", "scale", "faults injected"):
            table.add_row(name, value)
    for fault in result.faults:
        recover = f"{fault.recover_seconds:.1f} s" if fault.recover_seconds is not None else "-"
        table.add_row(f"fault: {fault.name}",
                      f"{fault.committed:,}/{fault.sent:,} in flight={fault.in_flight}, recovered {recover}")
    for family, report in result.reports.items():
        table.add_row(f"{family}: records / keys / dups", f"{report.records:,} / {report.keys:,} / "
                                                         f"{report.duplicates:,}")
    table.add_row("violations", str(result.violations or "none"))
    for failure in result.failures:
        table.add_row("failed", failure)
    for note in result.notes:
        table.add_row("note", note)
    table.add_row("drain / total", f"{result.drain_seconds:.1f} s / {result.seconds:.1f} s")
    console.print(table)
    colour = {"PASSED": "green", "FAILED": "red", "INVALID": "yellow"}[result.status]
    console.print(f"[bold {colour}]{result.status}[/]")


def record(result: ChaosResult, source: str, path: Path = RELIABILITY) -> None:
    """Add or replace this run's row (keyed by scenario, guarantee and scale) in the figures table of `path`."""
    row = "| " + " | ".join([*figures(result).values(), f"{source}, {dt.date.today().isoformat()}"]) + " |"
    text = path.read_text() if path.exists() else f"# Reliability\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    body, tail = rest.split(END, 1)
    rows = [line for line in body.strip().splitlines() if line.startswith("| ") and line not in (HEADER, RULE)]
    key = tuple(cell.strip() for cell in row.split("|")[1:4])
    rows = [r for r in rows if tuple(cell.strip() for cell in r.split("|")[1:4]) != key] + [row]
    rows.sort(key=lambda r: [int(c) if c.isdigit() else c for c in re.split(r"(\d+)", r.replace(",", ""))])
    path.write_text(f"{head}{BEGIN}\n{HEADER}\n{RULE}\n" + "\n".join(rows) + f"\n{END}{tail}")

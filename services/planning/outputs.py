"""Write a skew simulation to disk: `plan.json` and `partition_rates.png`.

The chart is drawn on a bare `matplotlib.figure.Figure`, rendered by the Agg backend without pyplot, so no
global backend or display is involved.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from kafka_rekey.shared.planning import SkewReport

REPORT_FILE = "plan.json"
CHART_FILE = "partition_rates.png"


def report_dict(report: SkewReport) -> dict[str, Any]:
    """The report as JSON-ready data, each strategy with its `skewed` flag."""
    data = dataclasses.asdict(report)
    for strategy, load in zip(data["strategies"], report.strategies, strict=True):
        strategy["skewed"] = load.skewed
    return data


def write_chart(report: SkewReport, path: Path) -> None:
    """One bar chart of partition rates per strategy, with the consumer capacity as a dashed line."""
    strategies = report.strategies
    figure = Figure(figsize=(12, 2.6 * len(strategies)))
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(strategies), 1, sharex=True, squeeze=False)[:, 0]
    capacity = report.params.consumer_capacity
    for axis, load in zip(axes, strategies, strict=True):
        colours = ["tab:red" if rate > capacity else "tab:blue" for rate in load.partition_rates]
        axis.bar(range(len(load.partition_rates)), load.partition_rates, color=colours)
        axis.axhline(capacity, color="black", linestyle="--", linewidth=1, label=f"capacity {capacity:,.0f}/s")
        axis.set_title(f"{load.strategy}: max {load.max_rate:,.0f}/s, P95 {load.p95_rate:,.0f}/s, "
                       f"skew {load.skew:.2f}x", fontsize=10)
        axis.set_ylabel("events/s")
        axis.legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("partition")
    figure.suptitle(f"Partition rates at {report.params.peak_rate:,.0f} events/s over "
                    f"{report.params.partitions} partitions")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def write_outputs(report: SkewReport, directory: Path) -> tuple[Path, Path]:
    """Write `plan.json` and `partition_rates.png` into `directory` (created if needed); return both paths."""
    directory.mkdir(parents=True, exist_ok=True)
    report_path, chart_path = directory / REPORT_FILE, directory / CHART_FILE
    report_path.write_text(json.dumps(report_dict(report), indent=2) + "\n", encoding="utf-8")
    write_chart(report, chart_path)
    return report_path, chart_path

"""Query results drawn as the dashboard looks in Grafana: each panel at its grid position on Grafana's dark theme,
its title, one line per series with its legend below, the y axis in the panel's unit, "No data" where nothing came.

Drawn on a bare `matplotlib.figure.Figure` (Agg, no pyplot), so no global backend or display is involved."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from kafka_rekey_dev.dashboard.panels import Panel, Query, legend

GRID_COLUMNS = 24
WIDTH_PX = 1600
ROW_PX = 30  # Grafana's height of one grid row
HEADER_PX = 44
GAP_PX = 6
TITLE_PX = 24
LEGEND_LINE_PX = 13
DPI = 100

BACKGROUND = "#111217"
PANEL = "#181b1f"
BORDER = "#2c3235"
TEXT = "#ccccdc"
MUTED = "#8e8e9e"
GRID = "#2a2d33"
# Grafana's classic palette, in its order.
PALETTE = ("#73BF69", "#F2CC0C", "#8AB8FF", "#FF780A", "#F2495C", "#5794F2", "#B877D9", "#705DA0", "#37872D",
           "#FADE2A", "#447EBC", "#C15C17", "#890F02", "#0A437C", "#6D1F62", "#584477")


@dataclass(frozen=True)
class Series:
    legend: str
    times: tuple[float, ...]
    """Unix seconds; NaN values where the series has a gap."""
    values: tuple[float, ...]


def matrix_series(query: Query, result: Sequence[Mapping[str, Any]], step_seconds: float) -> list[Series]:
    """The series of a Prometheus range query's `matrix` result, legends as Grafana writes them, a gap (NaN)
    wherever samples are more than one step apart so that a line does not bridge a stretch without data."""
    series = []
    for item in result:
        times: list[float] = []
        values: list[float] = []
        for stamp, text in item["values"]:
            if times and float(stamp) - times[-1] > 1.5 * step_seconds:
                times.append(times[-1] + step_seconds)
                values.append(math.nan)
            times.append(float(stamp))
            values.append(float(text))
        series.append(Series(legend(query.legend_format, item["metric"]), tuple(times), tuple(values)))
    return series


def _scaled(value: float, steps: Sequence[tuple[float, str]], digits: int = 3) -> str:
    for factor, suffix in steps:
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g}{suffix}"
    return f"{value:.{digits}g}"


_SHORT = ((1e12, " Tri"), (1e9, " Bil"), (1e6, " Mil"), (1e3, " K"))
_BYTES = ((1024.0 ** 4, " TiB"), (1024.0 ** 3, " GiB"), (1024.0 ** 2, " MiB"), (1024.0, " KiB"))


def format_value(value: float, unit: str) -> str:
    """A y-axis tick in Grafana's unit: `short`, `ops` (per second), `s`, `bytes`; any other unit as a number."""
    if value == 0:
        return {"ops": "0 ops/s", "s": "0 s", "bytes": "0 B"}.get(unit, "0")
    if unit == "bytes":
        return _scaled(value, _BYTES) if abs(value) >= 1024 else f"{value:.3g} B"
    if unit == "s":
        if abs(value) < 1e-3:
            return f"{value * 1e6:.3g} µs"
        return f"{value * 1e3:.3g} ms" if abs(value) < 1 else f"{value:.3g} s"
    if unit == "ops":
        return f"{_scaled(value, _SHORT)} ops/s"
    return _scaled(value, _SHORT)


def _clock(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%H:%M:%S")


def _legend_columns(labels: Sequence[str], width_px: float) -> int:
    widest = max(len(label) for label in labels) * 6.2 + 28
    return max(1, min(len(labels), int(width_px // widest)))


def _draw_panel(figure: Figure, panel: Panel, series: Sequence[Series], window: tuple[float, float],
                height_px: float) -> None:
    def fx(px: float) -> float:
        return px / WIDTH_PX

    def fy(px: float) -> float:
        return 1 - px / height_px

    column = WIDTH_PX / GRID_COLUMNS
    left, top = panel.grid.x * column + GAP_PX / 2, HEADER_PX + panel.grid.y * ROW_PX + GAP_PX / 2
    width, height = panel.grid.w * column - GAP_PX, panel.grid.h * ROW_PX - GAP_PX
    figure.add_artist(FancyBboxPatch((fx(left), fy(top + height)), fx(width), height / height_px,
                                     boxstyle="round,pad=0,rounding_size=0.002", transform=figure.transFigure,
                                     facecolor=PANEL, edgecolor=BORDER, linewidth=0.8, zorder=-1))
    figure.text(fx(left + 8), fy(top + TITLE_PX / 2 + 1), panel.title, color=TEXT, fontsize=9, fontweight="bold",
                va="center", ha="left")
    drawn = [item for item in series if any(not math.isnan(value) for value in item.values)]
    labels = [item.legend for item in drawn]
    columns = _legend_columns(labels, width - 16) if labels else 1
    legend_px = math.ceil(len(labels) / columns) * LEGEND_LINE_PX + 4 if labels else 0
    plot_left, plot_right = left + 62, left + width - 12
    plot_top, plot_bottom = top + TITLE_PX + 4, top + height - 20 - legend_px
    axes: Axes = figure.add_axes((fx(plot_left), fy(plot_bottom), fx(plot_right - plot_left),
                                  (plot_bottom - plot_top) / height_px))
    axes.set_facecolor(PANEL)
    for spine in axes.spines.values():
        spine.set_visible(False)
    axes.set_xlim(*window)
    if not drawn:
        axes.set_xticks([])
        axes.set_yticks([])
        axes.text(0.5, 0.5, "No data", transform=axes.transAxes, color=MUTED, fontsize=12, ha="center", va="center")
        return
    for index, item in enumerate(drawn):
        colour = PALETTE[index % len(PALETTE)]
        axes.plot(item.times, item.values, color=colour, linewidth=1.1, label=item.legend)
        axes.fill_between(item.times, item.values, color=colour, alpha=0.06, linewidth=0)
    axes.set_ylim(bottom=min(0.0, *(value for item in drawn for value in item.values if not math.isnan(value))))
    axes.grid(True, color=GRID, linewidth=0.6)
    axes.tick_params(colors=MUTED, labelsize=7, length=0, pad=4)
    axes.yaxis.set_major_locator(MaxNLocator(nbins=4))
    axes.xaxis.set_major_locator(MaxNLocator(nbins=max(2, int(width // 110))))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: format_value(value, panel.unit)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda stamp, _: _clock(stamp)))
    axes.legend(loc="upper left", bbox_to_anchor=(fx(left + 8), fy(top + height - legend_px - 2)),
                bbox_transform=figure.transFigure, ncol=columns, frameon=False, fontsize=7, labelcolor=TEXT,
                handlelength=1.2, handleheight=0.4, borderaxespad=0, borderpad=0, columnspacing=1.4,
                labelspacing=0.25)


def draw_dashboard(title: str, panels: Sequence[tuple[Panel, Sequence[Series]]],
                   window: tuple[float, float]) -> Figure:
    """The dashboard's panels with their series over `window` (Unix seconds), laid out by their grid positions."""
    rows = max((panel.grid.y + panel.grid.h for panel, _ in panels), default=1)
    height_px = HEADER_PX + rows * ROW_PX + GAP_PX
    figure = Figure(figsize=(WIDTH_PX / DPI, height_px / DPI), dpi=DPI, facecolor=BACKGROUND)
    FigureCanvasAgg(figure)
    start, end = window
    figure.text(GAP_PX / WIDTH_PX, 1 - HEADER_PX / 2 / height_px, title, color=TEXT, fontsize=13, va="center")
    figure.text(1 - GAP_PX / WIDTH_PX, 1 - HEADER_PX / 2 / height_px,
                f"{datetime.fromtimestamp(start, UTC):%Y-%m-%d %H:%M:%S} to {_clock(end)} UTC", color=MUTED,
                fontsize=9, va="center", ha="right")
    for panel, series in panels:
        _draw_panel(figure, panel, series, window, height_px)
    return figure

"""Query results drawn as the dashboard: Prometheus' matrix read into series with gaps kept, y ticks in the panel's
unit, every panel of the chart's dashboard at its grid position with its title, "No data" where nothing came, and a
PNG small enough for the docs."""

from __future__ import annotations

import json
import math
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.text import Text

from kafka_rekey_dev.dashboard.figure import Series, draw_dashboard, format_value, matrix_series
from kafka_rekey_dev.dashboard.panels import Panel, Query, dashboard_panels, grafana_variables
from kafka_rekey_dev.dashboard.run import write_png
from kafka_rekey_dev.embedded.maven import REPO_ROOT

DASHBOARD = json.loads((REPO_ROOT / "helm" / "rekey" / "dashboards" / "rekey.json").read_text())
PANELS = dashboard_panels(DASHBOARD, grafana_variables(DASHBOARD, "demo-rekey", scrape_seconds=1, step_seconds=2))
START = 1_800_000_000.0


def test_a_matrix_becomes_one_series_per_result_with_a_gap_where_samples_are_missing() -> None:
    query = Query("A", "sum by (service, topic) (rekey_consumer_lag)", "{{service}} {{topic}}")
    result = [{"metric": {"service": "demo-rekey-acl", "topic": "events"},
               "values": [[START, "5"], [START + 2, "3"], [START + 10, "0"], [START + 12, "NaN"]]}]

    [series] = matrix_series(query, result, step_seconds=2)

    assert series.legend == "demo-rekey-acl events"
    assert series.times[:3] == (START, START + 2, START + 4) and series.times[3:] == (START + 10, START + 12)
    assert series.values[:2] == (5.0, 3.0) and math.isnan(series.values[2]) and series.values[3] == 0.0
    assert math.isnan(series.values[4])


def test_ticks_are_written_in_the_panels_unit() -> None:
    assert [format_value(value, "short") for value in (0, 950, 12_500, 3_400_000)] == ["0", "950", "12.5 K",
                                                                                        "3.4 Mil"]
    assert [format_value(value, "ops") for value in (0, 250, 4_200)] == ["0 ops/s", "250 ops/s", "4.2 K ops/s"]
    assert [format_value(value, "s") for value in (0, 0.0004, 0.025, 2.5)] == ["0 s", "400 µs", "25 ms", "2.5 s"]
    assert [format_value(value, "bytes") for value in (512, 150 * 2 ** 20)] == ["512 B", "150 MiB"]
    assert format_value(7, "percent") == "7"


def _series(panel: Panel) -> list[Series]:
    times = tuple(START + 2 * index for index in range(60))
    return [Series(f"{panel.title} {query.ref_id}", times, tuple(float(index % 7) for index in range(60)))
            for query in panel.queries]


def _texts(figure: Figure) -> list[str]:
    return [text.get_text() for text in figure.findobj(Text)]


def test_every_panel_is_drawn_at_its_grid_position_with_its_title_and_no_data_said() -> None:
    empty = {"Checkpoint failures by reason (uncommitted work redone)", "Restore: changelog records still to read"}
    drawn = [(panel, [] if panel.title in empty else _series(panel)) for panel in PANELS]

    figure = draw_dashboard("rekey", drawn, (START, START + 120))

    texts = _texts(figure)
    assert {panel.title for panel in PANELS} <= set(texts)
    assert texts.count("No data") == len(empty)
    boxes = [axes.get_position() for axes in figure.axes]
    assert len(boxes) == len(PANELS)
    by_title = dict(zip((panel.title for panel in PANELS), boxes, strict=True))
    lag, events, rss = (by_title[title] for title in ("Consumer lag by group and topic", "Events/s in and out",
                                                       "RSS per pod"))
    assert lag.x0 < 0.5 < events.x0 and math.isclose(lag.y1, events.y1)
    assert rss.width > 1.9 * lag.width and rss.y1 < lag.y0
    for axes, (_, series) in zip(figure.axes, drawn, strict=True):
        legend = axes.get_legend()
        shown = [text.get_text() for text in legend.get_texts()] if legend is not None else []
        assert shown == [item.legend for item in series]


def test_the_png_stays_small_with_every_panel_full(tmp_path: Path) -> None:
    figure = draw_dashboard("rekey", [(panel, _series(panel)) for panel in PANELS], (START, START + 120))

    size = write_png(figure, tmp_path / "img" / "dashboard.png")

    assert (tmp_path / "img" / "dashboard.png").read_bytes().startswith(b"\x89PNG")
    assert size < 300 * 1024

"""The chart's dashboard JSON read as panels: every panel with its grid position, unit and queries, the template
variables replaced as Grafana would and as the chart renders the release; bad input named by panel and query."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kafka_rekey_dev.dashboard.panels import (
    DashboardError,
    GridPos,
    dashboard_panels,
    grafana_variables,
    legend,
    rate_interval,
)
from kafka_rekey_dev.embedded.maven import REPO_ROOT
from tests.helm.rekey.rendering import full_name, render

DASHBOARD = json.loads((REPO_ROOT / "helm" / "rekey" / "dashboards" / "rekey.json").read_text())
RELEASE = "demo-rekey"


def _panels(model: dict[str, Any]) -> list[Any]:
    return dashboard_panels(model, grafana_variables(model, RELEASE, scrape_seconds=1, step_seconds=2))


def test_every_panel_is_read_with_its_title_grid_unit_and_queries_and_no_variable_left() -> None:
    panels = _panels(DASHBOARD)

    assert [panel.title for panel in panels] == [raw["title"] for raw in DASHBOARD["panels"]]
    assert [panel.grid for panel in panels] == [GridPos(**raw["gridPos"]) for raw in DASHBOARD["panels"]]
    assert [panel.unit for panel in panels] == [raw["fieldConfig"]["defaults"]["unit"] for raw in DASHBOARD["panels"]]
    assert [[query.legend_format for query in panel.queries] for panel in panels] == [
        [target["legendFormat"] for target in raw["targets"]] for raw in DASHBOARD["panels"]]
    exprs = [query.expr for panel in panels for query in panel.queries]
    assert [expr for expr in exprs if "$" in expr or "RELEASE_PLACEHOLDER" in expr] == []
    events = next(panel for panel in panels if panel.title == "Events/s in and out")
    assert events.queries[0].expr == "sum by (service) (rate(rekey_consumed_total[4s]))"
    rss = next(panel for panel in panels if panel.title == "RSS per pod")
    assert rss.queries[0].expr == 'process_resident_memory_bytes{service=~"demo-rekey.*"}'


def test_the_release_is_substituted_as_the_chart_renders_the_dashboard() -> None:
    manifests = render({"dashboards": {"enabled": True}})
    rendered = json.loads(manifests.get("ConfigMap", full_name("dashboard"))["data"]["rekey.json"])

    assert full_name("dashboard").startswith(RELEASE)
    assert _panels(DASHBOARD) == _panels(rendered)


def test_rate_interval_is_grafanas_four_scrapes_or_one_step_plus_a_scrape() -> None:
    assert rate_interval(scrape_seconds=15, step_seconds=15) == "60s"
    assert rate_interval(scrape_seconds=1, step_seconds=2) == "4s"
    assert rate_interval(scrape_seconds=2, step_seconds=30) == "32s"


@pytest.mark.parametrize("expr", ["sum(up{cluster=\"$cluster\"})", "sum(up{cluster=\"${cluster}\"})",
                                  "sum(up{cluster=\"[[cluster]]\"})"])
def test_a_variable_without_a_value_is_an_error_naming_the_panel_and_query(expr: str) -> None:
    model = copy.deepcopy(DASHBOARD)
    model["panels"][2]["targets"][0]["expr"] = expr

    with pytest.raises(DashboardError) as error:
        _panels(model)
    assert str(error.value).startswith(
        "panel 'Dead letters/s by reason', query A uses the variable $cluster, which has no value here (known: ")


def test_a_panel_without_a_grid_position_or_a_query_without_expr_is_named() -> None:
    no_grid = copy.deepcopy(DASHBOARD)
    del no_grid["panels"][0]["gridPos"]
    no_expr = copy.deepcopy(DASHBOARD)
    del no_expr["panels"][1]["targets"][1]["expr"]

    with pytest.raises(DashboardError, match=r"^panel 'Consumer lag by group and topic' has no 'gridPos'$"):
        _panels(no_grid)
    with pytest.raises(DashboardError, match=r"^panel 'Events/s in and out', query B has no 'expr'$"):
        _panels(no_expr)


def test_a_collapsed_rows_panels_are_read_and_the_row_is_not() -> None:
    model = copy.deepcopy(DASHBOARD)
    model["panels"] = [{"type": "row", "title": "Checkpoints", "collapsed": True,
                        "panels": model["panels"][3:5]}, *model["panels"][:3]]

    assert [panel.title for panel in _panels(model)] == [raw["title"] for raw in
                                                         (*DASHBOARD["panels"][3:5], *DASHBOARD["panels"][:3])]


def test_legends_are_written_as_grafana_writes_them() -> None:
    labels = {"__name__": "rekey_consumer_lag", "service": "demo-rekey-acl", "topic": "t"}

    assert legend("{{service}} {{topic}} max", labels) == "demo-rekey-acl t max"
    assert legend("{{ service }} {{reason}}", labels) == "demo-rekey-acl"
    assert legend("", labels) == 'rekey_consumer_lag{service="demo-rekey-acl", topic="t"}'
    assert legend("__auto", {"org": "org-1"}) == '{org="org-1"}'

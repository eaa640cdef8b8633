"""The panels of a Grafana dashboard's JSON (title, grid position, unit, queries) with each PromQL expression ready
for Prometheus: the dashboard's template variables replaced by the values Grafana would give them."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

RELEASE_PLACEHOLDER = "RELEASE_PLACEHOLDER"
"""What the chart's ConfigMap template replaces with the release's full name (`rekey.fullname`)."""
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")


class DashboardError(ValueError):
    """The dashboard JSON lacks something a panel needs; the message names the panel and what."""


@dataclass(frozen=True)
class GridPos:
    """Where Grafana places a panel: 24 columns wide, `h` in rows of equal height."""

    x: int
    y: int
    w: int
    h: int


@dataclass(frozen=True)
class Query:
    ref_id: str
    expr: str
    legend_format: str


@dataclass(frozen=True)
class Panel:
    title: str
    grid: GridPos
    unit: str
    queries: tuple[Query, ...]


def rate_interval(scrape_seconds: float, step_seconds: float) -> str:
    """Grafana's `$__rate_interval`: the larger of four scrape intervals and one step plus one scrape interval."""
    return f"{max(4 * scrape_seconds, step_seconds + scrape_seconds):g}s"


def grafana_variables(dashboard: Mapping[str, Any], release: str, scrape_seconds: float,
                      step_seconds: float) -> dict[str, str]:
    """The values of the dashboard's constant variables (its release as the chart renders it) and of the
    built-in interval variables, for a query range of `step_seconds` over series scraped every `scrape_seconds`."""
    variables = {
        "__rate_interval": rate_interval(scrape_seconds, step_seconds),
        "__interval": f"{step_seconds:g}s",
        "__interval_ms": f"{step_seconds * 1000:g}",
    }
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "constant":
            variables[variable["name"]] = str(variable.get("query", "")).replace(RELEASE_PLACEHOLDER, release)
    return variables


def substitute(expr: str, variables: Mapping[str, str], where: str) -> str:
    """`expr` with `$name`, `${name}`, `${name:format}` and `[[name]]` replaced by their values."""

    def value(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group is not None)
        if name not in variables:
            raise DashboardError(f"{where} uses the variable ${name}, which has no value here "
                                 f"(known: {', '.join(sorted(variables))})")
        return variables[name]

    return VARIABLE.sub(value, expr)


def legend(legend_format: str, metric: Mapping[str, str]) -> str:
    """A series' legend as Grafana writes it: `{{label}}` replaced by the series' label (empty if it has none);
    without a format (or Grafana's `__auto`), the series' labels."""
    if legend_format in ("", "__auto"):
        name = metric.get("__name__", "")
        labels = ", ".join(f'{key}="{value}"' for key, value in sorted(metric.items()) if key != "__name__")
        return f"{name}{{{labels}}}"
    return LEGEND_LABEL.sub(lambda match: metric.get(match.group(1), ""), legend_format).strip()


def _leaf_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The dashboard's panels in order, a collapsed row's own panels included, the rows themselves left out."""
    for panel in panels:
        if panel.get("type") == "row":
            yield from _leaf_panels(panel.get("panels", []))
        else:
            yield panel


def _required(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in mapping:
        raise DashboardError(f"{where} has no {key!r}")
    return mapping[key]


def dashboard_panels(dashboard: Mapping[str, Any], variables: Mapping[str, str]) -> list[Panel]:
    """Every panel of `dashboard` (Grafana's JSON model) with its queries' variables substituted."""
    found = []
    for index, raw in enumerate(_leaf_panels(_required(dashboard, "panels", "the dashboard"))):
        title = str(raw.get("title") or f"panel {index + 1}")
        where = f"panel {title!r}"
        grid = _required(raw, "gridPos", where)
        queries = []
        for target in raw.get("targets", []):
            ref_id = str(target.get("refId", "?"))
            expr = _required(target, "expr", f"{where}, query {ref_id}")
            queries.append(Query(ref_id, substitute(expr, variables, f"{where}, query {ref_id}"),
                                 str(target.get("legendFormat", ""))))
        unit = raw.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
        found.append(Panel(title, GridPos(*(int(_required(grid, key, f"{where}'s gridPos")) for key in "xywh")),
                           unit, tuple(queries)))
    return found

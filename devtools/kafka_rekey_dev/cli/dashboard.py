"""`rekey dashboard render`: the chart's Grafana dashboard drawn from a real run's metrics (docs/HELM.md's picture)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.catalog_options import CatalogOption
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import make_console

dashboard_app = typer.Typer(
    name="dashboard", no_args_is_help=True,
    help="The chart's Grafana dashboard, rendered without Grafana (a development tool).",
)


@dashboard_app.command(name="render")
def render(
    out: Annotated[Path, typer.Option("--out", help="The PNG to write.")] = Path("docs/img/dashboard.png"),
    dashboard: Annotated[Path, typer.Option("--dashboard", exists=True, dir_okay=False,
                                            help="Grafana dashboard JSON.")] = Path(
        "helm/rekey/dashboards/rekey.json"),
    seconds: Annotated[float, typer.Option("--seconds", min=10, help="How long traffic is sent.")] = 90.0,
    events_per_wave: Annotated[int, typer.Option("--events-per-wave", min=1, help="Records of each wave of "
                                                 "traffic, one every 10 s (3 times as many in the first, 10 times "
                                                 "in the one sent while the ACL is down).")] = 3_000,
    workdir: Annotated[Path, typer.Option(help="Scratch directory for the stack (wiped first).")] = Path(
        "var/dashboard"),
    catalog: CatalogOption = None,
) -> None:
    """Start Kafka, the schema registry, the live ACL, projection and sink, and a Prometheus (`prometheus` on the
    PATH) scraping them every second as the chart's ServiceMonitors would; send waves of generated traffic with
    malformed records and redeliveries, restart the ACL once without its local state (it restores from the
    changelog) while a wave arrives; then query every panel of
    the dashboard over the run and draw it as Grafana lays it out, "No data" on a panel whose queries returned
    nothing. Lists the series each panel got."""
    from kafka_rekey.services.settings import ServiceSettings
    from kafka_rekey_dev.dashboard.run import load_dashboard, render_dashboard

    console = make_console()
    with user_errors():
        model = load_dashboard(dashboard)
        catalog_path = catalog or ServiceSettings().catalog_path
    with user_errors(ExitCode.FAILED):
        results = render_dashboard(console, model, out, workdir.resolve(), catalog_path, seconds, events_per_wave)
    for result in results:
        got = ", ".join(sorted({series.legend for series in result.series})) or "[yellow]no data[/]"
        console.print(f"  {result.panel.title}: {got}", highlight=False)


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(dashboard_app, name="dashboard", rich_help_panel=panel)

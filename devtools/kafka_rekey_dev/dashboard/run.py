"""The run behind `rekey dashboard render`: the embedded stack, the live ACL, projection and sink, waves of
generated traffic with bad records and redeliveries, one ACL restart that restores its state from the changelog,
a real Prometheus scraping the workers as the chart's ServiceMonitors would; then every panel of the dashboard
queried over the run and drawn into a PNG."""

from __future__ import annotations

import io
import json
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure
from PIL import Image
from rich.console import Console

from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey_dev.dashboard.figure import Series, draw_dashboard, matrix_series
from kafka_rekey_dev.dashboard.panels import DashboardError, Panel, dashboard_panels, grafana_variables
from kafka_rekey_dev.dashboard.prometheus import PrometheusServer
from kafka_rekey_dev.demo.stack import DemoStack, demo_stack
from kafka_rekey_dev.embedded.errors import NotReady
from kafka_rekey_dev.embedded.workers import ServiceProcess
from kafka_rekey_dev.waiting import wait_for

RELEASE = "demo"
FULL_NAME = f"{RELEASE}-rekey"  # the chart's `rekey.fullname` of that release
NAMESPACE = "rekey"
SERVICES = ("acl", "projection", "sink")
SCRAPE_SECONDS = 1.0
STEP_SECONDS = 2.0
WAVE_SECONDS = 10.0
BACKLOG_WAVES = 3  # the first wave: a backlog to start with
DOWNTIME_WAVES = 10  # sent while the ACL is down: lag for longer than the workers' lag gauges take to update
PALETTE_COLOURS = 256  # a palette PNG keeps the picture small; fewer colours would merge series' colours


@dataclass(frozen=True)
class PanelResult:
    panel: Panel
    series: list[Series]


def target_labels(service: str) -> dict[str, str]:
    """The target labels the Prometheus Operator gives a worker of the chart's ServiceMonitor (honorLabels off, so
    the worker's own `service` label becomes `exported_service`), for release `demo`. `instance` names the pod,
    not the local port: a restarted worker stays one series, as a restarted container does."""
    pod = f"{FULL_NAME}-{service}-0"
    return {"namespace": NAMESPACE, "service": f"{FULL_NAME}-{service}", "pod": pod, "container": service,
            "endpoint": "http", "job": service, "instance": f"{pod}:http"}


class _Workers:
    """The live services of the run, each with its own data dir, and the Prometheus targets they make."""

    def __init__(self, stack: DemoStack) -> None:
        self.stack = stack
        family = stack.catalog.family(stack.catalog.default_family)
        self.extra_env = {"sink": {"REKEY_SINK_TOPIC": family.tiers.low}}
        self.running: dict[str, ServiceProcess] = {}

    def data_dir(self, service: str) -> Path:
        return self.stack.workdir / f"state-{service}"

    def process(self, service: str, port: int | None = None) -> ServiceProcess:
        env = {**self.stack.service_env(), "REKEY_DATA_DIR": str(self.data_dir(service)),
               **self.extra_env.get(service, {})}
        return ServiceProcess(service, env, self.stack.workdir, port=port)

    def start_all(self) -> None:
        for service in SERVICES:
            self.running[service] = self.process(service).start()

    def targets(self) -> list[tuple[str, dict[str, str]]]:
        return [(f"127.0.0.1:{process.port}", target_labels(service)) for service, process in self.running.items()]

    def restart_cold(self, service: str, while_down: Callable[[], None]) -> None:
        """Stop `service`, drop its local state, call `while_down`, start it again on the same port (Prometheus
        scrapes its restore from the changelog topics)."""
        stopped = self.running.pop(service)
        stopped.stop()
        shutil.rmtree(self.data_dir(service), ignore_errors=True)
        self.running[service] = replacement = self.process(service, port=stopped.port)
        while_down()
        replacement.start()

    def stop(self) -> None:
        for process in self.running.values():
            process.stop()


@contextmanager
def _workers(stack: DemoStack) -> Iterator[_Workers]:
    workers = _Workers(stack)
    try:
        yield workers
    finally:
        workers.stop()


def _sleep_until(monotonic_at: float) -> None:
    time.sleep(max(0.0, monotonic_at - time.monotonic()))


def _send_waves(console: Console, stack: DemoStack, workers: _Workers, seconds: float, events_per_wave: int) -> None:
    """A backlog of `BACKLOG_WAVES` waves, then one wave every `WAVE_SECONDS`; in the middle the ACL is restarted
    without its local state, `DOWNTIME_WAVES` waves arriving while it is down."""
    source = stack.catalog.sources[0].name
    hot = tuple(dict.fromkeys(org for family in stack.catalog.families.values()
                              for org in (*family.high_volume_orgs, *family.dedicated)))
    seeds = iter(range(1000, 100_000))

    def send(events: int, what: str) -> None:
        summary = generate_to_topic(stack.bootstrap, source, events, 40, hot_orgs=hot, malformed_rate=0.02,
                                    duplicate_rate=0.03, seed=next(seeds))
        console.print(f"  {what}: {summary.records:,} records, {sum(summary.malformed.values())} malformed, "
                      f"{summary.duplicates} redelivered")

    waves = max(1, int(seconds // WAVE_SECONDS))
    started = time.monotonic()
    send(BACKLOG_WAVES * events_per_wave, "backlog")
    for wave in range(1, waves):
        _sleep_until(started + wave * WAVE_SECONDS)
        if wave == waves // 2:
            console.print("  restarting the ACL without its local state (a restore from the changelog)")
            workers.restart_cold("acl", lambda: send(DOWNTIME_WAVES * events_per_wave, "sent while the ACL is down"))
        else:
            send(events_per_wave, f"wave {wave}/{waves - 1}")


def _caught_up(prometheus: PrometheusServer) -> bool:
    lag = prometheus.query("sum(rekey_consumer_lag)")
    return bool(lag) and float(lag[0]["value"][1]) == 0


def query_panels(prometheus: PrometheusServer, panels: list[Panel], start: float, end: float) -> list[PanelResult]:
    return [PanelResult(panel, [series for query in panel.queries
                                for series in matrix_series(query, prometheus.query_range(
                                    query.expr, start, end, STEP_SECONDS), STEP_SECONDS)])
            for panel in panels]


def write_png(figure: Figure, path: Path) -> int:
    """Write `figure` as a palette PNG; return its size in bytes."""
    rendered = io.BytesIO()
    figure.savefig(rendered, format="png", facecolor=figure.get_facecolor())
    image = Image.open(rendered).convert("RGB").quantize(colors=PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT,
                                                         dither=Image.Dither.NONE)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=True)
    return path.stat().st_size


@dataclass(frozen=True)
class Dashboard:
    title: str
    panels: list[Panel]


def load_dashboard(path: Path) -> Dashboard:
    """The dashboard's panels with the variables of this run's Prometheus; a bad file fails naming what."""
    try:
        model = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise DashboardError(f"{path} is not JSON: {error}") from error
    variables = grafana_variables(model, FULL_NAME, SCRAPE_SECONDS, STEP_SECONDS)
    return Dashboard(str(model.get("title", path.stem)), dashboard_panels(model, variables))


def render_dashboard(console: Console, dashboard: Dashboard, out: Path, workdir: Path, catalog_path: Path,
                     seconds: float, events_per_wave: int) -> list[PanelResult]:
    """Run the stack with traffic for `seconds`, query every panel of the dashboard over the run, draw it to
    `out`; return what each panel got."""
    with demo_stack(workdir, catalog_path, console) as stack, ExitStack() as cleanup:
        prometheus = PrometheusServer(workdir / "prometheus", SCRAPE_SECONDS)
        workers = cleanup.enter_context(_workers(stack))
        with console.status("starting the ACL, the projection and the sink ..."):
            workers.start_all()
        cleanup.callback(prometheus.stop)
        with console.status("starting Prometheus ..."):
            prometheus.start(workers.targets())
            wait_for(lambda: len(prometheus.query("up == 1")) == len(SERVICES), 60, "every worker scraped",
                     error=NotReady)
        console.print(f"[green]✓[/] {', '.join(SERVICES)} running, Prometheus {prometheus.url} scraping them "
                      f"every {SCRAPE_SECONDS:g} s")
        start = time.time() - STEP_SECONDS
        _send_waves(console, stack, workers, seconds, events_per_wave)
        with console.status("waiting for the workers to catch up ..."):
            wait_for(lambda: _caught_up(prometheus), 300, "the workers' lag down to 0", error=NotReady)
            _sleep_until(time.monotonic() + 4 * STEP_SECONDS)  # the last rates fall back to 0 on the picture
        end = time.time()
        results = query_panels(prometheus, dashboard.panels, start, end)
    figure = draw_dashboard(dashboard.title, [(result.panel, result.series) for result in results],
                            (start, end))
    size = write_png(figure, out)
    console.print(f"[green]✓[/] {out} ({size / 1024:.0f} KiB)")
    return results

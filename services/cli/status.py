"""`rekey status`: lag per service group and topic, dead letters with their newest reasons, domain topic skew,
catalog drift, backfill hand-offs and the named workers' readiness and restore progress."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings, open_catalog
from kafka_rekey.services.cli.errors import user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json

if TYPE_CHECKING:
    from kafka_rekey.services.status.collect import Status



_HANDOFF_STATES = {
    "started": "running",
    "data_written": "data written, hand-off pending (do not start the live service yet)",
    "complete": "handed off",
}


def _timestamp(epoch: float | None) -> str:
    return "-" if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _render(status: Status, show_partitions: bool) -> None:
    from rich.table import Table

    _console = make_console()
    lag = Table(title="Lag (records behind the group's committed offset)", title_justify="left")
    for column in ("group", "topic", "lag", *(["per partition"] if show_partitions else [])):
        lag.add_column(column, justify="right" if column == "lag" else "left")
    for group in status.lag:
        shown = f"{group.total:,}" if group.committed else f"{group.total:,} (no commits)"
        detail = [" ".join(f"{p}:{n}" for p, n in sorted(group.partitions.items()))] if show_partitions else []
        lag.add_row(group.group, group.topic, shown, *detail)
    _console.print(lag)
    reasons = ", ".join(f"{reason} x{count}" for reason, count in status.dead_letter_reasons.items()) or "-"
    _console.print(f"dead letters: {status.dead_letters:,}; newest reasons: {reasons}", highlight=False)
    skew = Table(title="Domain topics (records per partition)", title_justify="left")
    for column in ("topic", "records", "busiest/mean", "busiest partition"):
        skew.add_column(column, justify="left" if column == "topic" else "right")
    for topic in status.skew:
        total = sum(topic.records.values())
        busiest = max(topic.records, key=topic.records.__getitem__) if topic.records else "-"
        skew.add_row(topic.topic, f"{total:,}", f"{topic.skew:.2f}x", str(busiest))
    _console.print(skew)
    if status.drift:
        drift = Table(title="Catalog drift (what `rekey topics apply` reports)", title_justify="left")
        for column in ("topic", "setting", "catalog", "cluster"):
            drift.add_column(column)
        for item in status.drift:
            drift.add_row(item.topic, item.setting, item.catalog, item.actual)
        _console.print(drift)
    else:
        _console.print("catalog: the cluster's topics match it", highlight=False)
    if status.backfills:
        runs = Table(title="Backfills (hand-off checkpoint topic)", title_justify="left")
        for column in ("source", "family", "state", "run", "started", "finished", "written"):
            runs.add_column(column, justify="right" if column == "written" else "left")
        for run in status.backfills:
            runs.add_row(run.source, run.family, _HANDOFF_STATES.get(run.state, run.state), run.run_id,
                         _timestamp(run.started_at), _timestamp(run.finished_at),
                         "-" if run.written is None else f"{run.written:,}")
        _console.print(runs)
    if status.migrations:
        moves = Table(title="Migrations (`rekey migrate status`)", title_justify="left")
        for column in ("group", "family", "sources", "step"):
            moves.add_column(column)
        for move in status.migrations:
            moves.add_row(move["group"], move["family"], ", ".join(move["sources"]), move["step"])
        _console.print(moves)
    if status.workers:
        workers = Table(title="Workers (their /readyz)", title_justify="left")
        for column in ("worker", "ready", "restore: changelog records read", "detail"):
            workers.add_column(column)
        for worker in status.workers:
            restore = ("-" if worker.restore_to_read is None
                       else f"{worker.restore_read:,} of {worker.restore_to_read:,}")
            workers.add_row(worker.address, "yes" if worker.ready else "no", restore, worker.detail)
        _console.print(workers)
    for note in status.notes:
        _console.print(f"note: {note}", highlight=False)


def status(
    catalog_path: CatalogOption = None,
    bootstrap_servers: BootstrapOption = None,
    acl_group: Annotated[str, typer.Option("--acl-group", help="The ACL's group (REKEY_APP_ID).")] = "rekey-acl",
    projection_group: Annotated[str, typer.Option("--projection-group", help="The projection's group.")] = (
        "rekey-projection"),
    sink_topic: Annotated[str | None, typer.Option("--sink-topic", help="The sink's topic (REKEY_SINK_TOPIC); its "
                                                   "group is --sink-group.")] = None,
    sink_group: Annotated[str, typer.Option("--sink-group", help="The sink's group (REKEY_SINK_GROUP_ID).")] = (
        "rekey-sink-interactions"),
    partitions: Annotated[bool, typer.Option("--partitions", help="Lag per partition too.")] = False,
    output: OutputOption = Output.table,
    watch: Annotated[float | None, typer.Option("--watch", min=1, help="Refresh every this many seconds.")] = None,
    workers: Annotated[list[str] | None, typer.Option("--worker", help="HOST:PORT of a worker's web port "
                                                      "(REKEY_WEB_PORT), repeatable: its readiness and restore "
                                                      "progress.")] = None,
) -> None:
    """One screen for an operator: lag per service group and topic, the dead-letter count and its newest reasons,
    the per-partition spread of each domain topic, the catalog's drift against the cluster and the backfills of
    the hand-off checkpoint topic. The first thing to run after `rekey run`."""
    from kafka_rekey.services.kafka.connectivity import require_kafka
    from kafka_rekey.services.status.collect import collect, service_groups

    with user_errors():
        catalog = open_catalog(catalog_path)
        config = kafka_settings(bootstrap_servers).librdkafka()
        require_kafka(config)
        groups = service_groups(catalog, acl_group, projection_group, (sink_group, sink_topic) if sink_topic else None)
        while True:
            snapshot = collect(config, catalog, groups, workers or [])
            if output is Output.json:
                print_json(snapshot.as_json())
            else:
                if watch:
                    make_console().clear()
                _render(snapshot, partitions)
            if not watch:
                return
            time.sleep(watch)  # the refresh period the user asked for


def register(app: typer.Typer) -> None:
    app.command(name="status")(status)

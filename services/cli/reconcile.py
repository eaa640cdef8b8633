"""`rekey reconcile`: audit source topic, domain topic and sink table per org and window; `--repair` rewinds."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, kafka_settings
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json

if TYPE_CHECKING:
    from rich.table import Table

    from kafka_rekey.services.reconciliation.reconciler import Report


def _when(value: str | None, option: str) -> int | None:
    """Epoch milliseconds from an ISO-8601 time (UTC unless it says otherwise) or a number of milliseconds."""
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as error:
        raise ValueError(f"{option} {value!r} is neither ISO-8601 (2024-05-01T10:00) nor epoch milliseconds") \
            from error
    return int((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp() * 1000)


def _iso(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def _render(report: Report) -> Table:
    from rich.table import Table

    table = Table(title=f"reconciliation: {report.windows} (org, window) checked, {len(report.found)} mismatching")
    for column in ("check", "org", "window (UTC)", "left", "right", "status"):
        table.add_column(column)
    for m in report.found:
        status = "[green]repaired[/]" if report.is_repaired(m) else "[bold red]MISMATCH[/]"
        table.add_row(m.check, m.org_id, f"{_iso(m.window_start)} .. {_iso(m.window_end)}",
                      f"{m.left.name} {m.left.count} {m.left.checksum[:10]}",
                      f"{m.right.name} {m.right.count} {m.right.checksum[:10]}", status)
    return table


def reconcile(
    topic: Annotated[str | None, typer.Option("--topic", help="Domain topic [REKEY_SINK_TOPIC].")] = None,
    table: Annotated[str | None, typer.Option("--table", help="Sink table [REKEY_SINK_TABLE].")] = None,
    database_url: Annotated[str | None, typer.Option("--database-url", help="[REKEY_SINK_DATABASE_URL]")] = None,
    source_topic: Annotated[str | None, typer.Option(
        "--source-topic", help="Also audit this catalog source topic against the domain topic.")] = None,
    since: Annotated[str | None, typer.Option(help="Audit event times from (ISO-8601 or epoch ms).")] = None,
    until: Annotated[str | None, typer.Option(help="Audit event times before (ISO-8601 or epoch ms).")] = None,
    window: Annotated[str | None, typer.Option(
        "--window", help="Event-time window: 15m, 1h, 1d, ... or seconds [default: REKEY_RECONCILE_WINDOW_S, else "
                         "1h].")] = None,
    bootstrap_servers: BootstrapOption = None,
    output: OutputOption = Output.table,
    repair: Annotated[bool, typer.Option("--repair", help="Rewind mismatching windows into the sink.")] = False,
    emit: Annotated[bool, typer.Option(help="Publish ReconciliationRequired records per mismatch.")] = True,
) -> None:
    """Audit per org and event-time window (counts + SHA-1 over sorted key fields): source topic vs domain
    topic, domain topic vs sink (history + corrections), sink history vs sink table. Exit 3 when a mismatch is
    left unrepaired."""
    from kafka_rekey.services.reconciliation.settings import ReconcileOptions, ReconcilerSettings
    from kafka_rekey.services.reconciliation.topics import TopicReadError
    from kafka_rekey.services.sink.settings import SinkOptions
    from kafka_rekey.services.sink.store import SinkStoreError
    from kafka_rekey.shared.durations import parse_duration_ms

    _console = make_console(stderr=output is Output.json)
    with user_errors():
        sink: dict[str, Any] = {"topic": topic, "table": table, "database_url": database_url}
        window_s = parse_duration_ms(window) // 1000 if window is not None else None
        audit: dict[str, Any] = {"source_topic": source_topic, "window_s": window_s, "repair": repair or None}
        settings = ReconcilerSettings(  # options given on the command line win over REKEY_* variables
            kafka=kafka_settings(bootstrap_servers),
            sink=SinkOptions(**{k: v for k, v in sink.items() if v is not None}),
            reconcile=ReconcileOptions(emit=emit, **{k: v for k, v in audit.items() if v is not None}),
        )
        from kafka_rekey.services.reconciliation.service import build_reconciler

        try:
            reconciler = build_reconciler(settings)
            with _console.status("auditing ..."):
                report = reconciler.run(_when(since, "--since"), _when(until, "--until"),
                                        repair=settings.reconcile.repair)
            reconciler.store.close()
        except (SinkStoreError, TopicReadError) as error:
            raise ValueError(str(error)) from error
    if output is Output.json:
        print_json({**dataclasses.asdict(report), "clean": report.clean})
        raise typer.Exit(ExitCode.OK if report.clean else ExitCode.PROBLEM_FOUND)
    if report.found:
        _console.print(_render(report))
    if report.undecodable:
        _console.print(f"{report.undecodable} domain records are not decodable events (see the sink's rejected "
                       f"table); they are not audited")
    if report.clean:
        done = f", {report.rewritten} events re-applied, {report.rebuilt_rows} rows rebuilt" if report.found else ""
        _console.print(f"[green]consistent[/]: {report.windows} (org, window) checked{done}")
        return
    _console.print(f"[bold red]{len(report.remaining)} (org, window) still mismatching[/]"
                   + ("" if settings.reconcile.repair else "; run with --repair to rewind them from the domain topic"))
    raise typer.Exit(ExitCode.PROBLEM_FOUND)


def register(app: typer.Typer) -> None:
    app.command(name="reconcile")(reconcile)

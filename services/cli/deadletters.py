"""`rekey deadletters list | show | redrive`: what is in the dead-letter topic, and re-sending what translates now."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings, open_catalog
from kafka_rekey.services.cli.errors import user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json

if TYPE_CHECKING:
    from kafka_rekey.shared.redrive import Selection

deadletters_app = typer.Typer(help="Inspect the dead-letter topic and redrive dead letters that translate now.",
                              no_args_is_help=True)

ReasonOption = Annotated[str | None, typer.Option("--reason", help="Only dead letters of this reason.")]
SourceOption = Annotated[str | None, typer.Option("--source", help="Only dead letters from this source topic.")]
SinceOption = Annotated[str | None, typer.Option(
    "--since", help="Only those dead-lettered at or after (ISO-8601 with offset, a date, or epoch ms).")]
UntilOption = Annotated[str | None, typer.Option("--until", help="Only those dead-lettered before (same forms).")]


def _selection(reason: str | None, source: str | None, since: str | None, until: str | None) -> Selection:
    from kafka_rekey.shared.durations import parse_instant
    from kafka_rekey.shared.redrive import Selection

    since_ms = None if since is None else parse_instant(since, "--since")
    until_ms = None if until is None else parse_instant(until, "--until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise ValueError(f"--since {since} is not before --until {until}")
    return Selection(reason, source, since_ms, until_ms)


@deadletters_app.command("list")
def list_(
    reason: ReasonOption = None, source: SourceOption = None, since: SinceOption = None, until: UntilOption = None,
    output: OutputOption = Output.table, catalog_path: CatalogOption = None,
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Dead letters counted by reason, source topic and hour."""
    from rich.table import Table

    from kafka_rekey.services.deadletters.inspect import count_dead_letters

    console = make_console(stderr=output is Output.json)
    with user_errors():
        selection = _selection(reason, source, since, until)
        catalog = open_catalog(catalog_path)
        with _reading(catalog.dlq_topic) as advance:
            rows, unreadable = count_dead_letters(kafka_settings(bootstrap_servers).librdkafka(), catalog.dlq_topic,
                                                  selection, advance)
    if output is Output.json:
        print_json({"topic": catalog.dlq_topic, "counts": rows, "total": sum(r["count"] for r in rows),
                    "unreadable": unreadable})
        return
    table = Table(title=f"dead letters in {catalog.dlq_topic}")
    for column in ("reason", "source", "hour (UTC)", "count"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for row in rows:
        table.add_row(row["reason"], row["source"], row["hour"], f"{row['count']:,}")
    console.print(table)
    console.print(f"{sum(r['count'] for r in rows):,} dead letters"
                  + (f"; {len(unreadable)} records without dlq.* context (first: {unreadable[0]})" if unreadable
                     else ""))


@deadletters_app.command("show")
def show(
    reason: ReasonOption = None, source: SourceOption = None, since: SinceOption = None, until: UntilOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many.")] = 20,
    catalog_path: CatalogOption = None, bootstrap_servers: BootstrapOption = None,
) -> None:
    """The selected dead letters, one JSON line each: position, dlq.* context, key, headers, value decoded where
    it can be (JSON, Avro through the registry, text, else base64)."""
    import json

    from kafka_rekey.services.deadletters.inspect import show_dead_letters
    from kafka_rekey.services.registry.client import SchemaRegistryClient
    from kafka_rekey.services.settings import RegistrySettings
    from kafka_rekey.shared.translation import AvroValues

    with user_errors():
        selection = _selection(reason, source, since, until)
        catalog = open_catalog(catalog_path)
        avro = AvroValues(SchemaRegistryClient(RegistrySettings()).writer_schema_text)
        for document in show_dead_letters(kafka_settings(bootstrap_servers).librdkafka(), catalog.dlq_topic,
                                          selection, limit, avro):
            typer.echo(json.dumps(document, sort_keys=True))


@deadletters_app.command("redrive")
def redrive(
    reason: Annotated[str, typer.Option("--reason", help="The dead letters of this reason (required).")],
    source: SourceOption = None, since: SinceOption = None, until: UntilOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Decide and report; send and remember nothing.")]
    = False,
    output: OutputOption = Output.table, catalog_path: CatalogOption = None,
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Run each selected dead letter through the current catalog's translation; re-send those that translate now
    to their source topic (original key, value, headers, plus rekey.redriven.from), report the others with their
    new reason. Dead letters redriven before are not sent again (the catalog's redrive topic remembers them)."""
    from rich.table import Table

    from kafka_rekey.services.deadletters.redrive import redrive as run_redrive

    console = make_console(stderr=output is Output.json)
    with user_errors():
        selection = _selection(reason, source, since, until)
        catalog = open_catalog(catalog_path)
        with _reading(catalog.dlq_topic) as advance:
            report = run_redrive(catalog, kafka_settings(bootstrap_servers), selection, dry_run, advance)
    if output is Output.json:
        print_json(report)
        return
    verb = "would re-send" if dry_run else "re-sent"
    table = Table(title=f"redrive of {reason} dead letters" + (" (dry run)" if dry_run else ""))
    table.add_column("outcome")
    table.add_column("count", justify="right")
    table.add_row("selected", f"{report.selected:,}")
    table.add_row(verb, f"{report.resent:,}")
    table.add_row("redriven before (not sent again)", f"{report.already_redriven:,}")
    for new_reason, count in report.left_by_reason.items():
        table.add_row(f"left: {new_reason}", f"{count:,}")
    console.print(table)
    for record in report.left_records[:10]:
        console.print(f"left {record['position']} ({record['source']}): {record['reason']}: {record['message']}",
                      highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(deadletters_app, name="deadletters")


@contextlib.contextmanager
def _reading(topic: str) -> Iterator[Callable[[int], None]]:
    """A spinner counting the records read from `topic`, on stderr; yields what advances it."""
    from rich.progress import Progress, SpinnerColumn, TextColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description} {task.completed:,} records"),
                  console=make_console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"reading {topic}")
        yield lambda count: bar.advance(task, count)

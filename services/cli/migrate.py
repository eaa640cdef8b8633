"""`rekey migrate plan | status | consumers | rollback | retire`: finish a migration. Move each consumer group
from a source topic onto the re-keyed family at exactly the records it has not consumed, roll it back, and retire
what is left behind. Exit codes: 0 done, 1 could not be done, 2 usage, 3 refused by a check (nothing changed)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings, open_catalog
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json

if TYPE_CHECKING:
    from kafka_rekey.services.migration.context import Family

migrate_app = typer.Typer(help="Move consumer groups onto a re-keyed family exactly, roll back, retire old topics.",
                          no_args_is_help=True)

SourceOption = Annotated[str, typer.Option("--source", help="The source topic the group reads today.")]
FamilyOption = Annotated[str, typer.Option("--family", help="The family re-keyed from the source.")]
GroupOption = Annotated[str, typer.Option("--group", help="The consumer group to move (stopped: no members).")]
WatchOption = Annotated[str, typer.Option(
    "--watch", help="How long to watch offsets for movement: 30s, 1m, ... (the AdminClient has no commit time).")]
AclGroupOption = Annotated[str | None, typer.Option(
    "--acl-group", help="The live ACL's consumer group [default: REKEY_APP_ID, else rekey-acl].")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Check and scan, commit nothing.")]


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    """A check's refusal: one line and exit 3; nothing was committed."""
    from kafka_rekey.services.migration.groups import GroupRefused

    try:
        yield
    except GroupRefused as error:
        make_console(stderr=True).print(f"[bold red]refused:[/] {error}", highlight=False)
        raise typer.Exit(ExitCode.PROBLEM_FOUND) from error


def _family(catalog_path: Path | None, bootstrap_servers: str | None, family: str, acl_group: str | None,
            source: str | None = None) -> Family:
    from kafka_rekey.services.migration.context import family_of
    from kafka_rekey.services.migration.records import migrations_topic

    catalog = open_catalog(catalog_path)
    migrations_topic(catalog)
    return family_of(catalog, kafka_settings(bootstrap_servers).librdkafka(), family,
                     acl_group or os.environ.get("REKEY_APP_ID") or "rekey-acl", source)


@contextlib.contextmanager
def _scanning(label: str, quiet: bool) -> Iterator[Callable[[int], None] | None]:
    if quiet:
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed:,} records"),
                  TimeElapsedColumn(), console=make_console(stderr=True), transient=True) as progress:
        task = progress.add_task(label)
        yield lambda records: progress.advance(task, records)


@migrate_app.command()
def plan(
    source: SourceOption, family: FamilyOption, watch: WatchOption = "30s", acl_group: AclGroupOption = None,
    catalog: CatalogOption = None, bootstrap_servers: BootstrapOption = None, output: OutputOption = Output.table,
) -> None:
    """Each consumer group with offsets on the source: members, lag, whether its offsets move, and whether the
    family is ready for it (backfill complete, the ACL at or past it with nothing in flight, verify passed)."""
    from rich.table import Table

    from kafka_rekey.services.migration.plan import plan_groups
    from kafka_rekey.shared.durations import parse_duration_ms

    with user_errors(), _refusals():
        seconds = parse_duration_ms(watch, "--watch") / 1000
        target = _family(catalog, bootstrap_servers, family, acl_group, source)
        with make_console(stderr=True).status(f"watching the groups on {source} for {watch} ..."):
            plans = plan_groups(target, source, seconds)
    if output is Output.json:
        print_json({"source": source, "family": family, "groups": [p.to_json() for p in plans]})
        return
    table = Table(title=f"consumer groups on {source} -> {family}", title_justify="left")
    for column in ("group", "members", "lag", "offsets", "family ready", "next"):
        table.add_column(column, overflow="fold")
    for p in plans:
        ready = "[green]yes[/]" if p.readiness.ready else "[red]no:[/] " + "; ".join(p.readiness.reasons)
        step = (f"rekey migrate consumers --group {p.group} --source {source} --family {family}" if p.can_move
                else "stop its consumers" if p.members or p.moving else "wait, or fix what the family lacks")
        table.add_row(p.group, str(p.members), f"{p.lag:,}", "moving" if p.moving else "idle", ready, step)
    make_console().print(table if plans else f"no consumer group has committed offsets on {source}")


@migrate_app.command()
def status(
    family: Annotated[str | None, typer.Option("--family", help="Only this family's migrations.")] = None,
    catalog: CatalogOption = None, bootstrap_servers: BootstrapOption = None, output: OutputOption = Output.table,
) -> None:
    """Every migration recorded and its step (moving, moved, rolling-back, rolled-back)."""
    from rich.table import Table

    from kafka_rekey.services.migration.records import migrations_topic, read_migrations

    with user_errors():
        loaded = open_catalog(catalog)
        state = read_migrations(kafka_settings(bootstrap_servers).librdkafka(), migrations_topic(loaded))
    rows = [m for m in state.migrations.values() if family is None or m.family == family]
    if output is Output.json:
        print_json({"migrations": [{"group": m.group, "family": m.family, "sources": m.sources, "step": m.step,
                                    "redelivered": m.redelivered, "at_ms": m.at_ms} for m in rows]})
        return
    table = Table(title="migrations", title_justify="left")
    for column in ("group", "family", "sources", "step", "sees again"):
        table.add_column(column, overflow="fold")
    for m in sorted(rows, key=lambda m: (m.family, m.group)):
        table.add_row(m.group, m.family, ", ".join(m.sources), m.step, f"{m.redelivered:,}")
    make_console().print(table if rows else "no migrations recorded")


@migrate_app.command()
def consumers(
    group: GroupOption, source: SourceOption, family: FamilyOption, dry_run: DryRunOption = False,
    keep_source_offsets: Annotated[bool, typer.Option(
        "--keep-source-offsets", help="Leave the group's offsets on the sources (lag alerts keep seeing it).")]
    = False,
    acl_group: AclGroupOption = None, catalog: CatalogOption = None, bootstrap_servers: BootstrapOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Move a stopped group onto the family: on each partition, the first record whose source position it has not
    consumed. Refused, with nothing committed, while the group runs or the family is not ready for it."""
    from kafka_rekey.services.migration.move import move_group

    with user_errors(), _refusals():
        target = _family(catalog, bootstrap_servers, family, acl_group, source)
        with _scanning(f"scanning {family}'s topics", output is Output.json) as progress:
            result = move_group(target, group, source, dry_run=dry_run, keep_source_offsets=keep_source_offsets,
                                progress=progress)
    if output is Output.json:
        print_json(result.to_json())
        return
    console = make_console()
    verb = "would move" if dry_run else "moved"
    console.print(f"[bold green]✓[/] {verb} group [bold]{group}[/] from {', '.join(result.sources)} onto "
                  f"{family}: {len(result.plan.start_offsets)} partitions, {result.plan.scanned:,} records scanned "
                  f"in {result.seconds:.1f} s", highlight=False)
    console.print(f"  it sees {result.plan.redelivered:,} records again it already consumed (drop them with "
                  f"already_consumed) and {result.plan.new_sources:,} records of sources it never read",
                  highlight=False)
    for warning in result.warnings:
        console.print(f"  [yellow]warning:[/] {warning}", highlight=False)


@migrate_app.command()
def rollback(
    group: GroupOption, family: FamilyOption, dry_run: DryRunOption = False, acl_group: AclGroupOption = None,
    catalog: CatalogOption = None, bootstrap_servers: BootstrapOption = None, output: OutputOption = Output.table,
) -> None:
    """Move a stopped group back from the family onto its sources, at the smallest source offset among the records
    it has not consumed; `rekey migrate consumers` works again after it."""
    from kafka_rekey.services.migration.rollback import rollback_group

    with user_errors(), _refusals():
        target = _family(catalog, bootstrap_servers, family, acl_group)
        with _scanning(f"scanning {family}'s topics", output is Output.json) as progress:
            result = rollback_group(target, group, dry_run=dry_run, progress=progress)
    if output is Output.json:
        print_json(result.to_json())
        return
    make_console().print(f"[bold green]✓[/] {'would roll' if dry_run else 'rolled'} group [bold]{group}[/] back "
                         f"onto {len(result.plan.offsets)} source partitions; it sees {result.plan.redelivered:,} "
                         f"records again ({result.scanned:,} scanned in {result.seconds:.1f} s)", highlight=False)


@migrate_app.command()
def retire(
    topic: Annotated[str, typer.Option("--topic", help="The topic a migration left behind.")],
    delete: Annotated[bool, typer.Option("--delete", help="Also delete the topic (asks first).")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Delete without asking.")] = False,
    watch: WatchOption = "30s", catalog: CatalogOption = None, bootstrap_servers: BootstrapOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Mark an older family version or a source nothing reads `retired: true` in the catalog, and with --delete
    delete it. Refused while a group reads it, a producer writes it, or the catalog still routes to it."""
    from kafka_rekey.services.migration.retire import retire_topic
    from kafka_rekey.services.settings import ServiceSettings
    from kafka_rekey.shared.durations import parse_duration_ms

    console = make_console(stderr=output is Output.json)
    with user_errors(), _refusals():
        seconds = parse_duration_ms(watch, "--watch") / 1000
        path = catalog or ServiceSettings().catalog_path
        result = retire_topic(kafka_settings(bootstrap_servers).librdkafka(), path, topic, watch_seconds=seconds,
                              delete=delete, confirm=lambda question: yes or typer.confirm(question),
                              log=lambda line: console.print(line, highlight=False))
    if output is Output.json:
        print_json(result.to_json())
        return
    marked = "marked retired in the catalog" if result.marked else "already retired, or not in the catalog"
    console.print(f"[bold green]✓[/] {topic}: {marked}{'; deleted' if result.deleted else ''}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(migrate_app, name="migrate")

"""`rekey replay`: one org's history of a family, read from only the partitions its keys hash to."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings, open_catalog
from kafka_rekey.services.cli.errors import user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json


def replay(
    org: Annotated[str, typer.Option("--org", help="The org to replay.")],
    family: Annotated[str | None, typer.Option(
        "--family", help="The topic family [default: the catalog's default family].")] = None,
    since: Annotated[str | None, typer.Option(
        "--from", help="From this record time (ISO-8601 with offset, a date, or epoch ms).")] = None,
    until: Annotated[str | None, typer.Option("--to", help="Up to this record time, exclusive (same forms).")]
    = None,
    to_topic: Annotated[str | None, typer.Option(
        "--to-topic", help="Write the records to this topic, bytes and headers unchanged.")] = None,
    to_file: Annotated[Path | None, typer.Option(
        "--to-file", help="Write JSON lines, values decoded from Avro through the registry.")] = None,
    output: OutputOption = Output.table, catalog_path: CatalogOption = None,
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Replay one org: from the catalog, the partitions that can hold it (its dedicated topic; its partition or
    its salt buckets' partitions in an org-keyed family; every partition of its tier in an org:interaction-keyed
    one), offsets found by timestamp, the org's records key by key in sequence order with their headers."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kafka_rekey.services.replay.run import replay as run_replay
    from kafka_rekey.services.settings import RegistrySettings
    from kafka_rekey.shared.durations import parse_instant

    console = make_console(stderr=output is Output.json)
    with user_errors():
        if (to_topic is None) == (to_file is None):
            raise ValueError("give exactly one of --to-topic T or --to-file F.jsonl")
        if to_file is not None and not to_file.parent.is_dir():
            raise FileNotFoundError(f"--to-file {to_file}: directory {to_file.parent} not found")
        since_ms = None if since is None else parse_instant(since, "--from")
        until_ms = None if until is None else parse_instant(until, "--to")
        if since_ms is not None and until_ms is not None and since_ms >= until_ms:
            raise ValueError(f"--from {since} is not before --to {until}")
        catalog = open_catalog(catalog_path)
        chosen = family or catalog.default_family
        if chosen not in catalog.families:
            raise ValueError(f"--family {chosen!r} is not a family of the catalog ({', '.join(catalog.families)})")
        with Progress(TextColumn("scanning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=make_console(stderr=True), transient=True) as bar:
            task = bar.add_task("scan", total=None)
            report = run_replay(catalog, kafka_settings(bootstrap_servers), RegistrySettings(), chosen, org,
                                since_ms, until_ms, to_topic, to_file,
                                on_range=lambda total: bar.update(task, total=total),
                                progress=lambda n: bar.advance(task, n))
    if output is Output.json:
        print_json(report)
        return
    console.print(report.why, highlight=False)
    console.print(f"read {len(report.partitions_read)} of {report.topic_partitions} partitions of {report.topic} "
                  f"({report.family_partitions} in family {report.family}); scanned {report.records_scanned:,} "
                  f"records, matched {report.records_matched:,} of {report.org_id} ({report.keys:,} keys) in "
                  f"{report.seconds:.1f} s -> {report.written_to}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command(name="replay")(replay)

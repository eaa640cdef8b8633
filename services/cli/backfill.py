"""`rekey backfill`, `rekey verify` and `rekey pyfiles`: the PySpark history jobs (spark_backfill/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json

if TYPE_CHECKING:
    from kafka_rekey.shared.catalog import Catalog
    from kafka_rekey.spark_backfill.jobs.verify import VerifyResult

MasterOption = Annotated[str | None, typer.Option(
    "--master", help="Spark master: local[*] by default; spark://HOST:7077 (a standalone cluster, e.g. `rekey spark "
                     "start`); k8s://https://... on Kubernetes; none under spark-submit.")]
ConfOption = Annotated[list[str] | None, typer.Option("--conf", help="Extra Spark property key=value (repeatable).")]


PropertiesOption = Annotated[Path | None, typer.Option(
    "--properties-file", metavar="<file>", exists=True, dir_okay=False,
    help="Spark properties file (`key value` or `key=value` lines, as spark-submit reads it); --conf wins.")]


def _session_options(properties_file: Path | None, conf: list[str] | None) -> dict[str, str]:
    """The Spark properties of a job: the properties file's, then the `--conf` pairs."""
    from kafka_rekey.spark_backfill.session import parse_conf, read_properties

    return {**(read_properties(properties_file) if properties_file else {}), **parse_conf(conf)}


def _family_of(catalog_path: Path, family: str | None, target: str | None) -> str:
    from kafka_rekey.services.catalog_files import load_catalog

    if family:
        return family
    if not target:
        raise ValueError("give --target-family F (or --target TOPIC, a topic of the family)")
    catalog = load_catalog(catalog_path)
    for name, spec in catalog.families.items():
        if target in spec.output_topics:
            return name
    raise ValueError(f"--target {target!r} is not an output topic of any family in {catalog_path}")


def _stage_printer(name: str, seconds: float, detail: str) -> None:
    make_console().print(f"[bold green]✓[/] {name:<10} {seconds:7.1f} s  {detail}", highlight=False)


def backfill(
    source: Annotated[list[str], typer.Option(
        "--source", help="Source topic; repeat it for every source feeding the family (shared keys need one run).")],
    target_family: Annotated[str | None, typer.Option("--target-family", help="Family whose topics to fill.")] = None,
    target: Annotated[str | None, typer.Option("--target", help="A topic of the family (alternative to "
                                                                "--target-family).")] = None,
    catalog: CatalogOption = None,
    manifest_topic: Annotated[str | None, typer.Option(
        "--manifest-topic", help="Hand-off checkpoint topic (default: the catalog's checkpoint topic).")] = None,
    master: MasterOption = None,
    conf: ConfOption = None,
    properties_file: PropertiesOption = None,
    from_files: Annotated[str | None, typer.Option("--from-files", help="Archived history instead of the topic.")]
    = None,
    file_format: Annotated[str, typer.Option("--file-format", help="parquet | json | avro (with --from-files).")]
    = "parquet",
    source_format: Annotated[str | None, typer.Option(
        "--source-format", help="A source format, for a source not in the catalog.")] = None,
    continue_: Annotated[bool, typer.Option(
        "--continue", help="Start after the existing hand-off: its source offsets and each key's last sequence.")]
    = False,
    restart: Annotated[bool, typer.Option("--restart", help="Run again although a run completed.")] = False,
    report: Annotated[Path | None, typer.Option("--report", help="Write the run report as JSON here.")] = None,
    ui: Annotated[bool, typer.Option("--ui/--no-ui", help="Serve the Spark UI.")] = False,
    bootstrap_servers: BootstrapOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Republish a source's full history into a family's versioned topics and write the live hand-off."""
    from rich.table import Table

    from kafka_rekey.services.settings import RegistrySettings, ServiceSettings
    from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
    from kafka_rekey.spark_backfill.session import build_session

    with user_errors():
        settings = ServiceSettings()
        catalog_path = catalog or settings.catalog_path
        family = _family_of(catalog_path, target_family, target)
        spark = build_session(f"rekey-backfill-{family}", master, ui=ui,
                              conf=_session_options(properties_file, conf))
        request = BackfillRequest(
            sources=source, family=family, catalog_path=catalog_path, checkpoint_topic=manifest_topic,
            from_files=from_files, file_format=file_format, source_format=source_format,
            continue_after_checkpoint=continue_, restart=restart,
        )
        result = run_backfill(spark, request, kafka_settings(bootstrap_servers), RegistrySettings(), _stage_printer)
    data = result.to_json()
    if report:
        report.write_text(json.dumps(data, indent=2))
    if output is Output.json:
        print_json(data)
        return
    table = Table(title=f"backfill {' + '.join(source)} -> {family} (run {result.run_id})", show_header=False)
    for name, value in [
        ("resumed", result.resumed_from or "no"),
        ("source records read", f"{result.read:,}"),
        ("events", f"{result.events:,}"),
        ("upstream duplicates dropped", f"{result.duplicates_dropped:,}"),
        ("written", f"{result.written:,}" + (f" ({result.already_written:,} already there)"
                                             if result.already_written else "")),
        ("keys", f"{result.keys:,}"),
        ("per topic", ", ".join(f"{t} {n:,}" for t, n in sorted(result.per_topic.items()))),
        ("skipped", ", ".join(f"{r} {n:,}" for r, n in sorted(result.skipped.items())) or "0"),
        ("dead-lettered", ", ".join(f"{r} {n:,}" for r, n in sorted(result.dead_lettered.items())) or "0"),
        ("time", f"{result.seconds:.1f} s ({result.events_per_second:,.0f} records/s)"),
    ]:
        table.add_row(name, value)
    make_console().print(table)


def verify(
    source: Annotated[list[str], typer.Option("--source", help="Source topic(s) the target was built from.")],
    target: Annotated[list[str] | None, typer.Option("--target", help="Target topic (repeatable).")] = None,
    target_family: Annotated[str | None, typer.Option("--target-family", help="All topics of this family.")]
    = None,
    catalog: CatalogOption = None,
    window: Annotated[str, typer.Option("--window", help="Event-time window: 15m, 1h, 1d, ...")] = "1h",
    live_group: Annotated[str | None, typer.Option(
        "--live-group", help="Consumer group of the live ACL (dual-run: only source records it has committed "
                             "count as expected).")] = None,
    source_format: Annotated[str | None, typer.Option("--source-format", help="For a source not in the catalog.")]
    = None,
    allow_redeliveries: Annotated[bool, typer.Option(
        "--allow-redeliveries", help="At-least-once target: count identical copies of a record (same key, "
                                     "sequence, event and source position) instead of failing on them.")] = False,
    report: Annotated[Path | None, typer.Option("--report", help="Also write the report as JSON here.")] = None,
    master: MasterOption = None,
    conf: ConfOption = None,
    properties_file: PropertiesOption = None,
    bootstrap_servers: BootstrapOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Compare source and target per org and event-time window (counts, SHA1 checksums) and check every key:
    dense sequences from 1, no duplicate, every record on its Java-parity partition. Exits 3 on any mismatch."""
    from kafka_rekey.services.catalog_files import load_catalog
    from kafka_rekey.services.settings import RegistrySettings, ServiceSettings
    from kafka_rekey.shared.durations import parse_duration_ms
    from kafka_rekey.spark_backfill.jobs.verify import VerifyRequest, render, run_verify
    from kafka_rekey.spark_backfill.session import build_session

    with user_errors():  # arguments and catalog are checked before a Spark JVM starts
        settings = ServiceSettings()
        catalog_path = catalog or settings.catalog_path
        load_catalog(catalog_path)
        request = VerifyRequest(sources=source, targets=list(target or []), family=target_family,
                                catalog_path=catalog_path, window_ms=parse_duration_ms(window),
                                live_group=live_group, source_format=source_format,
                                allow_redeliveries=allow_redeliveries)
        kafka = kafka_settings(bootstrap_servers)
        spark = build_session("rekey-verify", master, conf=_session_options(properties_file, conf))
        result = run_verify(spark, request, kafka, RegistrySettings())
        _record_verification(load_catalog(catalog_path), kafka.librdkafka(), result)
    if report is not None:
        report.write_text(json.dumps(result.to_json(), indent=2))
    if output is Output.json:
        print_json(result.to_json())
        raise typer.Exit(ExitCode.OK if result.ok else ExitCode.PROBLEM_FOUND)
    console = make_console()
    render(result, console)
    if report is not None:
        console.print(f"report: {report}")
    if not result.ok:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


def _record_verification(catalog: Catalog, config: dict[str, Any], result: VerifyResult) -> None:
    """The result, for `rekey migrate`'s readiness, in the catalog's migrations topic when it declares one."""
    from kafka_rekey.services.migration.records import Verification, write

    if catalog.migrations_topic is not None:
        write(config, catalog.migrations_topic, Verification(
            result.sources, result.family, result.ok, {"targets": result.targets, "window_ms": result.window_ms,
                                                       "source_events": result.source_events,
                                                       "target_records": result.target_records,
                                                       "keys_checked": result.keys_checked}))


def pyfiles(
    out: Annotated[Path, typer.Option("--out", help="Directory to write the archive into.")] = Path("dist"),
) -> None:
    """Build rekey's code as one zip for `--conf spark.submit.pyFiles=...` on a cluster; prints its path."""
    from kafka_rekey.spark_backfill.pyfiles import build_archive

    typer.echo(build_archive(out))


def register(app: typer.Typer) -> None:
    app.command(name="backfill")(backfill)
    app.command(name="verify")(verify)
    app.command(name="pyfiles")(pyfiles)

"""`rekey bench`: benchmarks of the ACL (`acl`), the CLI (`cli`), replay, rebalancing and the Spark backfill."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafka_rekey.services.cli.backfill import ConfOption, MasterOption
from kafka_rekey.services.cli.catalog_options import BootstrapOption

bench_app = typer.Typer(
    name="bench", no_args_is_help=True,
    help="Benchmarks (the ACL and the backfill on a fresh embedded stack); `--record` writes the figures into "
         "docs/BENCHMARKS.md.",
)


@bench_app.command(name="acl")
def acl(
    events: Annotated[int, typer.Option("--events", help="Backlog events per pipeline.")] = 200_000,
    paced_seconds: Annotated[float, typer.Option("--paced-seconds", help="Length of the paced phase.")] = 20.0,
    paced_fraction: Annotated[
        float, typer.Option("--paced-fraction", help="Paced rate as a share of the ACL's backlog events/s.")
    ] = 0.5,
    record: Annotated[bool, typer.Option("--record", help="Write the table into docs/BENCHMARKS.md.")] = False,
    workdir: Annotated[Path | None, typer.Option("--workdir", help="Scratch directory (wiped).")] = None,
    only: Annotated[
        str, typer.Option("--only", help="Comma-separated subset of rekey_1_family, rekey_debezium, rekey_2_families, "
                                         "rekey_exactly_once, rekey_state_1m, passthrough, faust_group_by, "
                                         "quix_group_by, kafka_streams, kafka_streams_exactly_once (not recorded).")
    ] = "",
    profile: Annotated[
        float, typer.Option("--profile", help="py-spy the workers for this many seconds (not recorded).")
    ] = 0.0,
) -> None:
    """Live ACL throughput, latency and memory vs a confluent-kafka passthrough (ceiling) and a faust group_by.

    \b
    Each pipeline runs alone, one worker process, on its own source topic pre-filled with the same events:
    backlog events/s (first consume -> last produce), then a paced phase for source->output latency p50/p99,
    and the peak RSS of the worker.
    """
    from kafka_rekey_dev.bench.acl import BENCH_DIR, run_bench

    command = f"rekey bench acl --events {events} --paced-seconds {paced_seconds:g} --paced-fraction {paced_fraction:g}"
    run_bench(events, paced_seconds, paced_fraction, workdir or BENCH_DIR, write_doc=record, command=command,
              only=tuple(name.strip() for name in only.split(",") if name.strip()), profile_seconds=profile)


@bench_app.command(name="translate")
def translate() -> None:
    """`shared` translate + route per event, in microseconds, for the generated `ccaas-json` events and the same
    events in Genesys' EventBridge envelope (target: 10 us); `rekey bench acl` measures the same first."""
    from kafka_rekey.services.console import make_console
    from kafka_rekey_dev.bench.acl import translate_route_figures

    translate_route_figures(make_console())


@bench_app.command(name="cli")
def cli(
    runs: Annotated[int, typer.Option("--runs", min=1, help="Fresh processes per command.")] = 20,
    record: Annotated[bool, typer.Option("--record", help="Write the table into docs/BENCHMARKS.md.")] = False,
) -> None:
    """Seconds from process start to exit of `rekey --help`, `--version` and `partition`, against the
    interpreter's own start-up (target: 0.3 s)."""
    from kafka_rekey_dev.bench.cli_startup import run_bench

    run_bench(runs, record)


@bench_app.command(name="replay")
def replay(
    events: Annotated[int, typer.Option("--events", min=1000, help="org_timeline records to write.")] = 1_000_000,
    orgs: Annotated[int, typer.Option("--orgs", min=3, help="Orgs, Zipf-sized (the catalog's hot orgs first).")] = 40,
    record: Annotated[bool, typer.Option("--record", help="Write the table into docs/BENCHMARKS.md.")] = False,
    workdir: Annotated[Path, typer.Option("--workdir", help="Scratch directory (wiped).")] = Path("var/bench-replay"),
) -> None:
    """`rekey replay` of one org against a full scan of the same org_timeline topic: partitions read, records
    scanned and matched, seconds."""
    from kafka_rekey.services.console import make_console
    from kafka_rekey_dev.bench.replay import run_bench

    run_bench(events, orgs, workdir, record, make_console())


@bench_app.command(name="rebalance")
def rebalance(
    backlog: Annotated[int, typer.Option("--backlog", min=1000, help="Events one worker re-keys for its capacity.")
                       ] = 200_000,
    phase: Annotated[float, typer.Option("--phase", min=5.0, help="Seconds between scale-outs.")] = 20.0,
    exactly_once: Annotated[bool, typer.Option("--exactly-once", help="Run the workers exactly-once.")] = False,
    record: Annotated[bool, typer.Option("--record", help="Write the table into docs/BENCHMARKS.md.")] = False,
    workdir: Annotated[Path, typer.Option("--workdir", help="Scratch directory (wiped).")] = Path(
        "var/bench-rebalance"),
) -> None:
    """The group's events/s each second while the ACL scales out 1 -> 2 -> 3 workers at half of one worker's
    capacity, eager (range) against incremental (cooperative-sticky) assignment."""
    from kafka_rekey.services.console import make_console
    from kafka_rekey_dev.bench.rebalance import run_bench

    run_bench(backlog, phase, exactly_once, workdir, record, make_console())


@bench_app.command(name="migrate")
def migrate(
    events: Annotated[int, typer.Option("--events", help="Records in the family (and the source).")] = 1_000_000,
    record: Annotated[bool, typer.Option("--record", help="Write the table into docs/BENCHMARKS.md.")] = False,
    workdir: Annotated[Path, typer.Option("--workdir", help="Scratch directory (wiped).")] = Path(
        "var/bench-migrate"),
) -> None:
    """The time `rekey migrate consumers` takes to move one group onto a family of `events` records, its
    boundary at half of history."""
    from kafka_rekey.services.console import make_console
    from kafka_rekey_dev.bench.migrate import run_bench

    run_bench(events, workdir, record, make_console())


@bench_app.command(name="backfill")
def bench_backfill(
    events: Annotated[int, typer.Option("--events", help="Source records to generate and backfill.")] = 1_000_000,
    orgs: Annotated[int, typer.Option("--orgs", help="Tenant orgs of the generated traffic.")] = 500,
    master: MasterOption = "local[*]",
    results: Annotated[Path | None, typer.Option(
        "--results", help="Markdown file to record the figures in, e.g. docs/BENCHMARKS.md (its own section is "
        "replaced); nothing is written without it.")] = None,
    cluster: Annotated[str | None, typer.Option(
        "--cluster", help="A standalone master (spark://..., e.g. `rekey spark start`'s): the Spark job runs there "
        "too, after the local run, and its records/s join the table.")] = None,
    conf: ConfOption = None,
    scale_events: Annotated[int, typer.Option(
        "--scale-events", help="Then top the source up to this many records (e.g. 10000000) and backfill them all in "
        "a process of its own with --scale-memory per JVM: its time, every process's peak RSS and the disk Spark "
        "spilled to. 0: not run.")] = 0,
    scale_memory: Annotated[str, typer.Option("--scale-memory", help="JVM memory of the --scale-events run.")] = "1g",
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Events/s of the Spark backfill vs a single-process confluent-kafka copy of the same topic, and CPU per record
    of both and of the live ACL over the same records, same run."""
    from kafka_rekey.services.cli.catalog_options import kafka_settings
    from kafka_rekey.services.cli.errors import user_errors
    from kafka_rekey.services.console import make_console
    from kafka_rekey.services.settings import RegistrySettings
    from kafka_rekey.spark_backfill.session import parse_conf
    from kafka_rekey_dev.bench.backfill import run_bench

    console = make_console()
    with user_errors():
        outcome = run_bench(events=events, orgs=orgs, master=master,
                            kafka=kafka_settings(bootstrap_servers), registry=RegistrySettings(), console=console,
                            results=results, cluster=cluster, conf=parse_conf(conf), scale_events=scale_events,
                            scale_memory=scale_memory)
    console.print(outcome.table())


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(bench_app, name="bench", rich_help_panel=panel)

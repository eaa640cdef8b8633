"""`rekey plan`: simulate partition load per key strategy from a key sample, flag skew, recommend the fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, kafka_settings
from kafka_rekey.services.cli.errors import user_errors
from kafka_rekey.services.console import Output, OutputOption, make_console, print_json

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from kafka_rekey.shared.planning import SampleRow, SkewReport


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    if seconds == 0:
        return "-"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h {rest // 60:02d}m" if hours else f"{rest // 60}m {rest % 60:02d}s"


def _topic_rows(topic: str, size: int, bootstrap: str | None, console: Console) -> list[SampleRow]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kafka_rekey.services.kafka.sampling import sample_keys  # loaded only when sampling a topic
    from kafka_rekey.shared.planning import rows_from_keys

    config = kafka_settings(bootstrap).librdkafka()
    columns = (TextColumn("sampling {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(topic, total=size)
        keys = sample_keys(config, topic, limit=size,
                           on_progress=lambda read, expected: progress.update(task, completed=read, total=expected))
    rows, skipped = rows_from_keys(keys)
    console.print(f"sampled {len(keys)} records of {topic}; {skipped} keys were not org_id:interaction_id",
                  highlight=False)
    if not rows:
        raise ValueError(f"topic {topic!r} gave no org_id:interaction_id keys to simulate with")
    return rows


def _strategy_table(report: SkewReport) -> Table:
    from rich.table import Table

    capacity = report.params.consumer_capacity
    table = Table(title=f"{report.params.peak_rate:,.0f} events/s over {report.params.partitions} partitions, "
                        f"consumer capacity {capacity:,.0f}/s per partition", title_justify="left")
    for column in ("strategy", "keys", "max/s", "P95/s", "skew", "over capacity", "lag growth/s", "drain",
                   "ordering kept"):
        table.add_column(column, justify="left" if column in ("strategy", "ordering kept") else "right")
    for load in report.strategies:
        style = "red" if load.skewed else "green"
        table.add_row(
            f"[{style}]{load.strategy}[/]", f"{load.distinct_keys:,}", f"{load.max_rate:,.0f}",
            f"{load.p95_rate:,.0f}", f"{load.skew:.2f}x", str(len(load.over_capacity)), f"{load.lag_growth:,.0f}",
            _duration(load.drain_seconds), load.ordering,
        )
    return table


def _print_findings(report: SkewReport, console: Console) -> None:
    for load in report.strategies:
        if load.skewed:
            culprits = ", ".join(f"{o.org_id} ({o.rate:,.0f}/s)" for o in load.hottest_orgs)
            console.print(f"[red]skew[/] under {load.strategy}: partition {load.hottest_partition} takes "
                          f"{load.max_rate:,.0f}/s ({load.skew:.1f}x the mean), mostly {culprits}", highlight=False)
    if report.hot_orgs:
        console.print("hot orgs: " + ", ".join(f"{o.org_id} ({o.share:.1%}, {o.rate:,.0f}/s)"
                                               for o in report.hot_orgs), highlight=False)
    for advice in report.recommendations:
        console.print(f"recommend [bold]{advice.action}[/] for {advice.org_id}: {advice.reason}", highlight=False)
    console.print(f"recommended partitions for org_interaction keys: {report.recommended_partitions}",
                  highlight=False)


def plan(
    peak_rate: Annotated[float, typer.Option("--peak-rate", min=0.001, help="Peak events/s over all keys.")],
    partitions: Annotated[int, typer.Option("--partitions", min=1, help="Partition count to simulate.")],
    out: Annotated[Path, typer.Option("--out", help="Directory for plan.json and partition_rates.png.")],
    sample: Annotated[Path | None, typer.Option(
        "--sample", help="Key sample: .csv (org_id,interaction_id[,weight]) or .jsonl with the same fields.",
    )] = None,
    sample_topic: Annotated[str | None, typer.Option(
        "--sample-topic", help="Sample org_id:interaction_id keys from this live topic instead of a file.",
    )] = None,
    sample_size: Annotated[int, typer.Option("--sample-size", min=1, help="Records to sample from the topic.")] = (
        20_000
    ),
    bootstrap_servers: BootstrapOption = None,
    consumer_capacity: Annotated[float, typer.Option(
        "--consumer-capacity", min=0.001, help="Events/s one consumer sustains on one partition.",
    )] = 1000.0,
    salt_buckets: Annotated[int, typer.Option("--salt-buckets", min=2, help="Buckets per salted hot org.")] = 16,
    peak_duration: Annotated[float, typer.Option(
        "--peak-duration", min=0, help="Seconds the peak lasts (lag builds up meanwhile).",
    )] = 3600.0,
    offpeak_ratio: Annotated[float, typer.Option(
        "--offpeak-ratio", min=0, max=1, help="Incoming rate after the peak, as a fraction of the peak.",
    )] = 0.5,
    output: OutputOption = Output.table,
) -> None:
    """Simulate partition load per key strategy from a key sample; flag skew and recommend the fix.

    For each strategy: per-partition rate, max and P95, lag growth and drain time at the consumer capacity, and
    the ordering it keeps. Writes plan.json and partition_rates.png to --out and prints a table.
    """
    from kafka_rekey.shared.planning import SimulationParams, parse_sample, simulate

    console = make_console(stderr=output is Output.json)
    with user_errors():
        if (sample is None) == (sample_topic is None):
            raise ValueError("give exactly one of --sample FILE or --sample-topic TOPIC")
        if sample is not None:
            if not sample.is_file():
                raise FileNotFoundError(f"key sample {sample} not found")
            rows = parse_sample(sample.read_text(encoding="utf-8"), str(sample))
        else:
            rows = _topic_rows(str(sample_topic), sample_size, bootstrap_servers, console)
        report = simulate(rows, SimulationParams(
            peak_rate=peak_rate, partitions=partitions, consumer_capacity=consumer_capacity,
            salt_buckets=salt_buckets, peak_duration_s=peak_duration, offpeak_ratio=offpeak_ratio,
        ))
        from kafka_rekey.services.planning.outputs import write_outputs  # matplotlib: loaded only by this command
        report_path, chart_path = write_outputs(report, out)
    if output is Output.json:
        from kafka_rekey.services.planning.outputs import report_dict

        print_json(report_dict(report))
        return
    console.print(_strategy_table(report))
    _print_findings(report, console)
    console.print(f"wrote {report_path} and {chart_path}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command(name="plan")(plan)

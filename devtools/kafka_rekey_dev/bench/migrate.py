"""`rekey bench migrate`: moving one consumer group onto a family of 1,000,000 records with its boundary at half
of history, timed as `rekey migrate consumers` runs it.

A fresh embedded stack with the catalog's topics. The source gets `events` records in its partitions; the family
gets one domain record per source record, in source order, on the partition the ACL places its key (`shared.
routing`), with the `seq` and `src` headers the ACL writes. The live ACL's group is committed at the source's end,
the group to move at half of each source partition, and a passed verification is recorded (the move's readiness
checks read them; running the ACL and Spark here would only measure them). Then `move_group`: every check, the
scan of every family partition, the commits and the migration record.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.migration.context import family_of
from kafka_rekey.services.migration.groups import commit
from kafka_rekey.services.migration.move import MoveResult, move_group
from kafka_rekey.services.migration.records import Verification, migrations_topic, write
from kafka_rekey.services.settings import KafkaSettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.routing import route
from kafka_rekey_dev.bench.document import replace_section
from kafka_rekey_dev.demo.stack import demo_stack
from kafka_rekey_dev.embedded.maven import REPO_ROOT

DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
HEADING = "## Moving a consumer group (rekey bench migrate)"
FAMILY = "interaction_events"
ACL_GROUP = "rekey-acl"
GROUP = "bench-consumers"


@dataclass(frozen=True)
class Outcome:
    events: int
    partitions: int
    result: MoveResult

    @property
    def rate(self) -> float:
        return self.result.plan.scanned / self.result.seconds if self.result.seconds else 0.0


def _fill(kafka: KafkaSettings, source: str, partitions: int, catalog: Catalog, events: int,
          console: Console) -> dict[int, int]:
    """Source records and their family records; the end offset of each source partition."""
    rng = random.Random(49)
    values = [rng.randbytes(rng.randrange(180, 320)) for _ in range(512)]
    orgs = [f"org-{i:04d}" for i in range(400)] + ["org-acme", "org-initech"]
    weights = [1 / rank for rank in range(1, len(orgs) + 1)]
    producer = make_producer(kafka, **{"linger.ms": 50, "batch.size": 1_000_000, "enable.idempotence": False,
                                       "acks": 1})
    ends = dict.fromkeys(range(partitions), 0)
    sequences: dict[str, int] = {}

    def send(*args: object, **kwargs: object) -> None:
        while True:
            try:
                producer.produce(*args, **kwargs)
                return
            except BufferError:
                producer.poll(0.05)

    with Progress(TextColumn("writing the source and the family"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("fill", total=events)
        for index, org in enumerate(rng.choices(orgs, weights, k=events)):
            partition = index % partitions
            offset = ends[partition]
            ends[partition] += 1
            send(source, values[index % len(values)][:40], partition=partition)
            placed = route(catalog, FAMILY, org, f"int-{rng.randrange(events // 8)}")
            sequence = sequences[placed.key] = sequences.get(placed.key, 0) + 1
            send(placed.topic, values[index % len(values)], placed.key.encode(), partition=placed.partition,
                 headers=[("seq", str(sequence).encode()), ("src", f"{source}/{partition}/{offset}".encode())])
            if index % 10_000 == 0:
                producer.poll(0)
                bar.update(task, completed=index)
        producer.flush(120)
    return ends


def run_bench(events: int, workdir: Path, record: bool, console: Console) -> Outcome:
    load = os.getloadavg()
    console.print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with demo_stack(workdir, REPO_ROOT / "catalog" / "topics.yaml", console) as stack:
        catalog = stack.catalog
        kafka = KafkaSettings(bootstrap_servers=stack.bootstrap)
        source = next(s for s in catalog.sources if FAMILY in s.feeds)
        ends = _fill(kafka, source.name, source.partitions, catalog, events, console)
        config = kafka.librdkafka()
        commit(config, ACL_GROUP, {(source.name, p): end for p, end in ends.items()})
        commit(config, GROUP, {(source.name, p): end // 2 for p, end in ends.items()})
        write(config, migrations_topic(catalog), Verification([source.name], FAMILY, True, {"bench": True}))
        family = family_of(catalog, config, FAMILY, ACL_GROUP, source.name)
        with Progress(TextColumn("rekey migrate consumers: scanning"), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True) as bar:
            task = bar.add_task("scan", total=events)
            result = move_group(family, GROUP, source.name, progress=lambda n: bar.advance(task, n))
        outcome = Outcome(events, len(family.partitions), result)
    table = Table(title=f"moving {GROUP} onto {FAMILY} ({outcome.partitions} partitions, {events:,} records)")
    for column in ("scanned", "records/s", "sees again", "seconds"):
        table.add_column(column, justify="right")
    table.add_row(f"{result.plan.scanned:,}", f"{outcome.rate:,.0f}", f"{result.plan.redelivered:,}",
                  f"{result.seconds:.1f}")
    console.print(table)
    if record:
        replace_section(DOC, HEADING, _markdown(outcome))
        console.print(f"recorded in {DOC}")
    return outcome


def _markdown(outcome: Outcome) -> str:
    result = outcome.result
    return "\n".join([
        HEADING, "",
        f"`rekey bench migrate --events {outcome.events}`, recorded {dt.datetime.now(dt.UTC):%Y-%m-%d}: one group "
        f"moved onto `{FAMILY}` ({outcome.partitions} partitions) holding {outcome.events:,} records, its boundary "
        "at half of each source partition; the embedded single broker on the same 2 cores. The time is "
        "`move_group`'s whole: checks, the scan of every partition "
        "(read_committed, to the end: what the group sees again is counted), the commits and the record. "
        "Target: under 60 s.", "",
        "| records scanned | records/s | sees again | seconds |", "| ---: | ---: | ---: | ---: |",
        f"| {result.plan.scanned:,} | {outcome.rate:,.0f} | {result.plan.redelivered:,} | {result.seconds:.1f} |",
    ]) + "\n"

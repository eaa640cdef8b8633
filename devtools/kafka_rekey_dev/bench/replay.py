"""`rekey bench replay`: one org's replay from a large `org_timeline` against a full scan of the same topic.

A fresh embedded stack; the catalog's `org_timeline` topic filled with `events` domain records of `orgs` orgs
(the catalog's hot orgs salted, the others keyed by org id, each key's records numbered by a `seq` header, values
of a realistic size), as the ACL places them (`shared.routing`). Then the replay of a mid-sized plain org and of
a salted hot org (partitions read, records scanned and matched, seconds), and a scan of every partition keeping
the same plain org, the way a generic consumer would have to read it.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafka_rekey.services.kafka.producers import make_producer
from kafka_rekey.services.kafka.topics import create_topics
from kafka_rekey.services.replay.reading import scan
from kafka_rekey.services.replay.run import replay
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog, OwnedTopic
from kafka_rekey.shared.replay import ReplayScope, org_scope
from kafka_rekey.shared.routing import route
from kafka_rekey_dev.bench.document import replace_section
from kafka_rekey_dev.demo.stack import demo_stack
from kafka_rekey_dev.embedded.maven import REPO_ROOT

DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
HEADING = "## Replay of one org (rekey bench replay)"
FAMILY = "org_timeline"


@dataclass
class Row:
    what: str
    partitions: str
    scanned: int
    matched: int
    seconds: float


def _orgs(catalog: Catalog, count: int) -> list[str]:
    hot = sorted(catalog.family_table(FAMILY).hot_orgs)
    return hot + [f"org-{i:05d}" for i in range(1, count - len(hot) + 1)]


def fill(kafka: KafkaSettings, catalog: Catalog, events: int, orgs: list[str], console: Console) -> dict[str, int]:
    """Write the records; how many each org got. Orgs are Zipf-sized (s = 1), hot orgs the biggest."""
    rng = random.Random(35)
    weights = [1 / rank for rank in range(1, len(orgs) + 1)]
    values = [rng.randbytes(rng.randrange(180, 320)) for _ in range(1024)]
    sequences: dict[str, int] = {}
    per_org: dict[str, int] = dict.fromkeys(orgs, 0)
    producer = make_producer(kafka, **{"linger.ms": 50, "batch.size": 1_000_000, "enable.idempotence": False,
                                       "acks": 1})
    chosen = rng.choices(orgs, weights, k=events)
    with Progress(TextColumn(f"writing {FAMILY}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("fill", total=events)
        for index, org in enumerate(chosen):
            placed = route(catalog, FAMILY, org, f"int-{rng.randrange(events // 20)}")
            sequence = sequences[placed.key] = sequences.get(placed.key, 0) + 1
            per_org[org] += 1
            while True:
                try:
                    producer.produce(placed.topic, values[index % len(values)], placed.key.encode(),
                                     partition=placed.partition,
                                     headers=[("seq", str(sequence).encode()), ("src", f"bench/0/{index}".encode())])
                    break
                except BufferError:
                    producer.poll(0.05)
            if index % 10_000 == 0:
                producer.poll(0)
                bar.update(task, completed=index)
        producer.flush(120)
    return per_org


def run_bench(events: int, orgs: int, workdir: Path, record: bool, console: Console) -> list[Row]:
    load = os.getloadavg()
    console.print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    catalog_path = REPO_ROOT / "catalog" / "topics.yaml"
    with demo_stack(workdir, catalog_path, console) as stack:
        kafka = KafkaSettings(bootstrap_servers=stack.bootstrap)
        catalog = stack.catalog
        names = _orgs(catalog, orgs)
        per_org = fill(kafka, catalog, events, names, console)
        plain = sorted((o for o in names if o not in catalog.family_table(FAMILY).hot_orgs), key=per_org.__getitem__)
        org = plain[len(plain) // 2]
        hot = names[0]
        target = OwnedTopic.model_validate({**catalog.topic(catalog.family(FAMILY).tiers.low).model_dump(),
                                            "name": "bench_replay_out_v1"})
        create_topics(AdminClient({"bootstrap.servers": stack.bootstrap}), [target])
        rows: list[Row] = []
        registry = RegistrySettings(url=stack.registry_url)
        for who in (org, hot):
            report = replay(catalog, kafka, registry, FAMILY, who, None, None, target.name, None)
            rows.append(Row(f"rekey replay --org {who} ({per_org[who]:,} events)",
                            f"{len(report.partitions_read)} of {report.topic_partitions}", report.records_scanned,
                            report.records_matched, report.seconds))
        scope = org_scope(catalog, FAMILY, org)
        everything = ReplayScope(FAMILY, org, scope.topic, tuple(range(scope.topic_partitions)),
                                 scope.topic_partitions, scope.family_partitions, "full scan")
        started = time.monotonic()
        found = scan(kafka.librdkafka(), everything, None, None)
        rows.append(Row(f"full scan of {scope.topic} for {org}", f"{scope.topic_partitions} of "
                        f"{scope.topic_partitions}", found.scanned, len(found.matched),
                        round(time.monotonic() - started, 3)))
    table = Table(title=f"replay of one org of {orgs} from {events:,} {FAMILY} records")
    for column in ("what", "partitions read", "records scanned", "matched", "seconds"):
        table.add_column(column, justify="left" if column == "what" else "right")
    for row in rows:
        table.add_row(row.what, row.partitions, f"{row.scanned:,}", f"{row.matched:,}", f"{row.seconds:.2f}")
    console.print(table)
    if record:
        replace_section(DOC, HEADING, _markdown(rows, events, orgs, load))
        console.print(f"recorded in {DOC}")
    return rows


def _markdown(rows: list[Row], events: int, orgs: int, load: tuple[float, float, float]) -> str:
    lines = [
        HEADING, "",
        f"`rekey bench replay --events {events} --orgs {orgs}` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC: "
        f"{events:,} `{FAMILY}` records of {orgs} Zipf-sized orgs on the embedded single broker (32 partitions; the "
        f"hot orgs salted into 16 buckets), the replay written to a topic; load average at the start "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min), 2 cores.", "",
        "| what | partitions read | records scanned | matched | seconds |", "| --- | ---: | ---: | ---: | ---: |",
        *(f"| {r.what} | {r.partitions} | {r.scanned:,} | {r.matched:,} | {r.seconds:.2f} |" for r in rows),
    ]
    return "\n".join(lines) + "\n"

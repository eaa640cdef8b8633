"""The demo's before/after view: how scattered each interaction was in the source, and where it is now."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.shared.catalog import Catalog

Layout = dict[tuple[str, str], list[tuple[int, int]]]


def source_spread(manifest: Path) -> dict[str, set[int]]:
    """org:interaction -> source partitions its events landed on (from the generator's manifest)."""
    spread: dict[str, set[int]] = defaultdict(set)
    with manifest.open() as lines:
        for line in lines:
            row = json.loads(line)
            if row["kind"] == "event":
                spread[f"{row['org_id']}:{row['interaction_id']}"].add(row["partition"])
    return spread


def domain_layout(config: dict[str, object], catalog: Catalog, family: str) -> Layout:
    """(topic, key) -> [(partition, seq)] in log order, for the family's output topics."""
    layout: Layout = defaultdict(list)
    for topic in catalog.family(family).output_topics:
        for message in iter_topic(dict(config), topic):
            headers = dict(message.headers() or [])
            layout[(topic, message.key().decode())].append((message.partition(), int(headers["seq"])))
    return layout


def render_before_after(console: Console, spread: dict[str, set[int]], layout: Layout) -> None:
    scattered = sum(1 for partitions in spread.values() if len(partitions) > 1)
    after = {key: {p for p, _ in rows} for (_, key), rows in layout.items()}
    table = Table(title="Before / after: where one interaction's events live")
    table.add_column("interaction (org:id)")
    table.add_column("source partitions (before)")
    table.add_column("domain topic / partition (after)")
    table.add_column("sequences")
    busiest = sorted(spread, key=lambda k: (-len(spread[k]), k))[:6]
    topics = {key: topic for (topic, key) in layout}
    for key in busiest:
        rows = layout.get((topics.get(key, ""), key), [])
        table.add_row(key[:48], ", ".join(map(str, sorted(spread[key]))),
                      f"{topics.get(key, '-')} / {', '.join(map(str, sorted(after.get(key, set()))))}",
                      ", ".join(str(seq) for _, seq in rows))
    console.print(table)
    one_partition = sum(1 for partitions in after.values() if len(partitions) == 1)
    console.print(f"before: {scattered:,} of {len(spread):,} interactions spread over 2+ source partitions;  "
                  f"after: {one_partition:,} of {len(after):,} keys on exactly one partition")


def render_skew(console: Console, layout: Layout, topic: str, partitions: int, width: int = 50) -> None:
    counts = Counter(p for (t, _), rows in layout.items() if t == topic for p, _ in rows)
    if not counts:
        return
    peak = max(counts.values())
    console.print(f"[bold]records per partition of {topic}[/] (Java-parity murmur2 placement)")
    for partition in range(partitions):
        count = counts.get(partition, 0)
        console.print(f"  p{partition:<3} {'█' * round(width * count / peak):<{width}} {count:,}")


def render_dead_letters(console: Console, config: dict[str, object], topic: str) -> int:
    reasons = Counter(dict(m.headers() or [])["dlq.reason"].decode() for m in iter_topic(dict(config), topic))
    console.print(f"dead letters: {sum(reasons.values()):,} "
                  f"({', '.join(f'{r}: {n}' for r, n in reasons.most_common())}) in {topic}")
    return sum(reasons.values())

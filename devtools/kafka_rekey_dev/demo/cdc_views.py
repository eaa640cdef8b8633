"""The CDC part's before/after view: the source topic keyed by table row (`{"id": N}`) against the domain
topics keyed `org_id:interaction_id`, one interaction's events from created to deleted, the counts per op and the
dead letters of the source."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from kafka_rekey.services.check.cdc import CdcCheck
from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.checking.cdc import UNCHANGED, CdcEvent
from kafka_rekey_dev.demo.crm import WorkloadSummary

OPS = (("r", "snapshot"), ("c", "created"), ("u", "updated"), ("d", "deleted"))


@dataclass
class SourceRows:
    """What the source topic holds per table row: its partition(s) and its records' ops (None: a tombstone)."""

    partitions: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    ops: dict[int, list[str | None]] = field(default_factory=lambda: defaultdict(list))
    records: int = 0
    tombstones: int = 0
    topic_partitions: int = 0


def _payload(document: bytes | None) -> Any:
    if document is None:
        return None
    parsed = json.loads(document)
    return parsed.get("payload") if isinstance(parsed, dict) and "schema" in parsed else parsed


def source_rows(config: dict[str, object], topic: str) -> SourceRows:
    rows = SourceRows()
    seen_partitions: set[int] = set()
    for message in iter_topic(dict(config), topic):
        rows.records += 1
        seen_partitions.add(message.partition())
        key = _payload(message.key())
        if not isinstance(key, dict) or "id" not in key:
            continue
        row_id = int(key["id"])
        rows.partitions[row_id].add(message.partition())
        value = _payload(message.value())
        rows.ops[row_id].append(value.get("op") if isinstance(value, dict) else None)
        rows.tombstones += value is None
    rows.topic_partitions = len(seen_partitions)
    return rows


def _shown(payload: str, key: str) -> str:
    """The payload without nulls, the ids where they are the title's, and the notes' text (its length instead)."""
    row = json.loads(payload)
    ids = dict(zip(("org_id", "interaction_id"), key.split(":", 1), strict=True))
    shown = {name: value for name, value in row.items() if value is not None and ids.get(name) != value}
    if isinstance(shown.get("notes"), str):
        shown["notes"] = f"<{len(shown['notes']):,} chars>"
    return json.dumps(shown, separators=(", ", ": "))


def render_cdc(console: Console, config: dict[str, object], catalog: Catalog, source_topic: str,
               checked: CdcCheck, summary: WorkloadSummary) -> None:
    source = source_rows(config, source_topic)
    row_of: dict[str, int] = {}
    changes_of: dict[str, list[str]] = defaultdict(list)
    for change in checked.changes:
        row_of.setdefault(change.key, change.row_id)
        changes_of[change.key].append(change.op)
    events: dict[str, list[CdcEvent]] = defaultdict(list)
    for event in checked.events:
        events[event.key].append(event)
    for found in events.values():
        found.sort(key=lambda e: e.sequence)
    _render_keys(console, catalog, source_topic, source, row_of, changes_of, events, summary.showcase)
    _render_showcase(console, summary.showcase, row_of, events)
    _render_counts(console, checked, source, summary)
    dead = checked.report.dead_letters
    console.print(f"dead letters of {source_topic}: {sum(dead.values())} (expected 0"
                  f"{'; ' + ', '.join(f'{r}: {n}' for r, n in dead.most_common()) if dead else ''}) "
                  f"in {catalog.dlq_topic}")


def _render_keys(console: Console, catalog: Catalog, topic: str, source: SourceRows, row_of: dict[str, int],
                 changes_of: dict[str, list[str]], events: dict[str, list[CdcEvent]], showcase: str) -> None:
    table = Table(title=f"Before / after: {topic} keyed by table row, the domain keyed by interaction")
    for column in ("source key (before)", "partition", "row's changes", "domain key (after)",
                   "domain topic / partition", "sequences"):
        table.add_column(column)
    by_org: dict[str, list[str]] = defaultdict(list)
    for key in changes_of:
        by_org[key.split(":", 1)[0]].append(key)
    sample = [showcase] + [max(keys, key=lambda k: (len(changes_of[k]), k)) for org, keys in sorted(by_org.items())
                           if showcase not in keys]
    for key in sample:
        row_id = row_of[key]
        ops = " ".join(op or "∅" for op in source.ops.get(row_id, []))
        found = events.get(key, [])
        where = ", ".join(sorted({f"{e.topic} / {e.partition}" for e in found})) or "-"
        table.add_row(f'{{"id": {row_id}}}', ", ".join(map(str, sorted(source.partitions.get(row_id, set())))),
                      ops, key, where, ", ".join(str(e.sequence) for e in found))
    console.print(table)
    org_partitions: dict[str, set[int]] = defaultdict(set)
    for key, row_id in row_of.items():
        org_partitions[key.split(":", 1)[0]] |= source.partitions.get(row_id, set())
    spread = sum(1 for partitions in org_partitions.values() if len(partitions) > 1)
    one = sum(1 for found in events.values() if len({(e.topic, e.partition) for e in found}) == 1)
    tiers = defaultdict(set)
    for key, found in events.items():
        for event in found:
            tiers[event.topic].add(key.split(":", 1)[0])
    console.print(f"before: {source.records} records over {source.topic_partitions} partitions keyed by row id "
                  f"(∅ a tombstone), {spread} of {len(org_partitions)} orgs' rows on 2+ partitions;  after: "
                  f"{one} of {len(events)} interactions on exactly one partition, keyed org_id:interaction_id ("
                  + "; ".join(f"{t}: {', '.join(sorted(orgs))}" for t, orgs in sorted(tiers.items())) + ")")


def _render_showcase(console: Console, showcase: str, row_of: dict[str, int],
                     events: dict[str, list[CdcEvent]]) -> None:
    found = events.get(showcase, [])
    table = Table(title=f'One interaction, created to deleted: {showcase} (row {{"id": {row_of.get(showcase)}}})')
    for column in ("seq", "event", "op", "LSN", "source p/offset", "interaction_type",
                   "payload (notes: their length)"):
        table.add_column(column)
    for event in found:
        table.add_row(str(event.sequence), event.event_type, event.change_op or "", str(event.ordering_token),
                      f"{event.source_partition}/{event.source_offset}", json.dumps(event.interaction_type),
                      _shown(event.payload, showcase))
    console.print(table)
    console.print(f"an update that leaves the TOASTed notes alone does not carry them: the payload names them under "
                  f"{UNCHANGED}; the delete's before image is the primary key alone (REPLICA IDENTITY DEFAULT), "
                  f"its ids come from the row's earlier changes")
    deletes = [event for found in events.values() for event in found if event.change_op == "d"]
    filled = [event for event in deletes if event.interaction_type == "" or any(
        value is not None for name, value in json.loads(event.payload).items() if name != "id")]
    if filled:
        console.print(f"[yellow]note:[/] {len(filled)} of {len(deletes)} delete events pass on Debezium's stand-ins "
                      f"for the NOT NULL columns the before image lacks (\"\", epoch 0) as values, in the payload "
                      f"and interaction_type (a known limit of the translation)")


def _render_counts(console: Console, checked: CdcCheck, source: SourceRows, summary: WorkloadSummary) -> None:
    report = checked.report
    table = Table(title="Committed row changes and domain events, by Debezium op")
    table.add_column("op")
    table.add_column("committed (manifest)", justify="right")
    table.add_column("domain events", justify="right")
    for op, name in OPS:
        table.add_row(f"{name} ({op})", f"{report.committed_by_op[op]:,}", f"{report.events_by_op[op]:,}")
    table.add_row("total", f"{report.changes:,}", f"{report.events:,}")
    console.print(table)
    unchanged = sum(1 for change in checked.changes if None in change.large.values())
    console.print(f"updates leaving the notes unchanged: {unchanged}, named under {UNCHANGED} in "
                  f"{report.unchanged_named} events; payloads carrying Debezium's placeholder: "
                  f"{len(report.placeholders)};  not events: {source.tombstones} tombstones (counted skips), "
                  f"{summary.rolled_back} changes rolled back")


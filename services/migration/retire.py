"""`rekey migrate retire`: what a migration leaves behind (an older family version, a source nothing reads any
more) marked `retired: true` in the catalog and, when asked, deleted. Refused while anything still uses it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.catalog_files import display_path
from kafka_rekey.services.migration.groups import (
    ADMIN_TIMEOUT,
    GroupRefused,
    groups,
    high_watermarks,
    members,
    offsets_on,
    partitions_of,
    readers,
)
from kafka_rekey.shared.catalog import CatalogError, parse_catalog


@dataclass
class RetireResult:
    topic: str
    marked: bool
    """`retired: true` was written into the catalog (False: it was already, or the catalog does not list it)."""
    deleted: bool
    idle_groups: list[str] = field(default_factory=list)
    """Groups with offsets on the topic that did not move over the watch: their offsets go with the topic."""

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "marked": self.marked, "deleted": self.deleted, "idle_groups": self.idle_groups}


def marked_text(text: str, topic: str) -> str | None:
    """The catalog text with `retired: true` in `topic`'s entry of `topics`, or None if no entry names it."""
    entry = re.compile(rf"^(?P<indent>[ \t]*)- name:[ \t]*[\"']?{re.escape(topic)}[\"']?[ \t]*(#.*)?$", re.M)
    match = entry.search(text)
    if match is None:
        return None
    following = text[match.end():].split("\n", 2)
    if len(following) > 1 and re.match(r"^\s*retired:\s*true\b", following[1]):
        return text
    indent = match.group("indent") + "  "
    return f"{text[:match.end()]}\n{indent}retired: true{text[match.end():]}"


def _retired_text(text: str, topic: str, source: str) -> str | None:
    """The catalog text once `topic` is retired (None: the catalog does not list it); refusals for a source the
    catalog still declares and a topic a family still routes to."""
    data = yaml.safe_load(text) or {}
    feeding = next((entry.get("feeds") or [] for entry in data.get("sources") or [] if entry.get("name") == topic),
                   None)
    if feeding is not None:
        raise GroupRefused(f"the catalog still feeds {', '.join(feeding)} from {topic}: remove it from `sources` "
                           "first")
    listed = any(entry.get("name") == topic for entry in data.get("topics") or [])
    marked = marked_text(text, topic) if listed else None
    try:
        parse_catalog(marked if marked is not None else text, source)
    except CatalogError as error:
        routed = [p for p in error.problems if p.where == f"topic {topic!r}" and p.field == "retired"]
        if routed:
            raise GroupRefused(f"{topic} is still a family topic: {routed[0].message}") from error
        raise
    return marked


def retire_topic(config: dict[str, Any], catalog_path: Path, topic: str, *, watch_seconds: float,
                 delete: bool, confirm: Callable[[str], bool], log: Callable[[str], None]) -> RetireResult:
    text = catalog_path.read_text(encoding="utf-8")
    marked = _retired_text(text, topic, display_path(catalog_path))
    partitions = partitions_of(config, [topic])
    known = groups(config)
    first = {group: offsets_on(config, group, partitions) for group in known}
    first = {group: offsets for group, offsets in first.items() if offsets}
    active = {group: count for group, count in members(config, sorted(first)).items() if count}
    active |= readers(config, known, topic)
    if active:
        raise GroupRefused(f"{topic} is still read: group{'s' if len(active) > 1 else ''} "
                           f"{', '.join(sorted(active))} {'have' if len(active) > 1 else 'has'} active members")
    ends = high_watermarks(config, partitions)
    log(f"watching {topic} for {watch_seconds:g} s: producers and consumer groups must be idle")
    time.sleep(watch_seconds)
    if high_watermarks(config, partitions) != ends:
        raise GroupRefused(f"{topic} is still written: its end offsets moved over {watch_seconds:g} s")
    moved = sorted(group for group, offsets in first.items() if offsets_on(config, group, partitions) != offsets)
    if moved:
        raise GroupRefused(f"{topic} is still read: the offsets of {', '.join(moved)} moved over {watch_seconds:g} s")
    result = RetireResult(topic, marked is not None and marked != text, False, sorted(first))
    if marked is not None and result.marked:
        catalog_path.write_text(marked, encoding="utf-8")
    if delete and confirm(f"Delete topic {topic} ({len(partitions)} partitions)? This cannot be undone."):
        with AdminClient(config) as admin:
            admin.delete_topics([topic], operation_timeout=ADMIN_TIMEOUT)[topic].result(ADMIN_TIMEOUT)
        result.deleted = True
    return result

"""Windowed audit: group records by (org, event-time window), count them and checksum their key fields.

A record's key fields identify it (and, where both sides carry them, pin the content that matters): the
checksum of a window is the SHA-1 over the window's distinct key tuples, sorted, so it does not depend on
arrival order, partitioning or duplicates. Two sides of a check agree on a window when counts and checksums are
equal; a window present on one side only is a mismatch too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_rekey.shared.sink.events import SinkEvent
from kafka_rekey.shared.sink.state import StateRow

SOURCE_VS_DOMAIN = "source_vs_domain"
DOMAIN_VS_SINK = "domain_vs_sink"
HISTORY_VS_TABLE = "history_vs_table"
CHECKS = (SOURCE_VS_DOMAIN, DOMAIN_VS_SINK, HISTORY_VS_TABLE)

KeyField = str | int | None
WindowKey = tuple[str, int]
"""(org_id, window start in epoch milliseconds)."""

SOURCE_KEY_FIELDS = ("org_id", "interaction_id", "event_id")
"""What a source record and its domain event share (the sequence is assigned in translation)."""
EVENT_KEY_FIELDS = ("org_id", "interaction_id", "event_id", "sequence", "event_type", "event_time")


@dataclass(frozen=True, slots=True)
class AuditRecord:
    org_id: str
    event_time: int
    key: tuple[KeyField, ...]


@dataclass(frozen=True, slots=True)
class WindowDigest:
    count: int
    checksum: str


@dataclass(frozen=True, slots=True)
class Side:
    name: str
    count: int
    checksum: str


@dataclass(frozen=True, slots=True)
class Mismatch:
    check: str
    org_id: str
    window_start: int
    window_end: int
    left: Side
    right: Side


_EMPTY = WindowDigest(0, hashlib.sha1(b"").hexdigest())


def window_start(event_time: int, window_ms: int) -> int:
    if window_ms <= 0:
        raise ValueError(f"audit window must be positive, got {window_ms} ms")
    return event_time - event_time % window_ms


def source_record(org_id: str, interaction_id: str, event_id: str, event_time: int) -> AuditRecord:
    return AuditRecord(org_id, event_time, (org_id, interaction_id, event_id))


def event_record(event: SinkEvent, fields: tuple[str, ...] = EVENT_KEY_FIELDS) -> AuditRecord:
    return AuditRecord(event.org_id, event.event_time, tuple(getattr(event, name) for name in fields))


def state_record(row: StateRow) -> AuditRecord:
    return AuditRecord(row.latest.org_id, row.latest.event_time, (
        *(getattr(row.latest, name) for name in EVENT_KEY_FIELDS), row.event_count,
    ))


def _encode(key: tuple[KeyField, ...]) -> bytes:
    return "\x1f".join("\x00" if value is None else str(value) for value in key).encode() + b"\n"


def digest_windows(records: Iterable[AuditRecord], window_ms: int) -> dict[WindowKey, WindowDigest]:
    keys: dict[WindowKey, set[tuple[KeyField, ...]]] = {}
    for record in records:
        keys.setdefault((record.org_id, window_start(record.event_time, window_ms)), set()).add(record.key)
    digests: dict[WindowKey, WindowDigest] = {}
    for window, members in keys.items():
        sha = hashlib.sha1()
        for encoded in sorted(_encode(key) for key in members):
            sha.update(encoded)
        digests[window] = WindowDigest(len(members), sha.hexdigest())
    return digests


def compare(check: str, left_name: str, left: Mapping[WindowKey, WindowDigest], right_name: str,
            right: Mapping[WindowKey, WindowDigest], window_ms: int) -> list[Mismatch]:
    """Every window (sorted by org, then start) where `left` and `right` disagree."""
    mismatches = []
    for org_id, start in sorted(set(left) | set(right)):
        ours, theirs = left.get((org_id, start), _EMPTY), right.get((org_id, start), _EMPTY)
        if ours != theirs:
            mismatches.append(Mismatch(
                check, org_id, start, start + window_ms,
                Side(left_name, ours.count, ours.checksum), Side(right_name, theirs.count, theirs.checksum),
            ))
    return mismatches


def in_window(event_time: int, since: int | None, until: int | None) -> bool:
    return (since is None or event_time >= since) and (until is None or event_time < until)

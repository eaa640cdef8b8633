"""Which records of a partition are the org's (by key: every key strategy starts with the org id), and the order
a replay writes them in: key by key, each key's records by their `seq` header."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from kafka_rekey.shared.keys import KEY_SEPARATOR

T = TypeVar("T")


def is_org_key(key: bytes | None, org_id: bytes) -> bool:
    """Whether a domain record's key belongs to the org: `org`, `org:interaction` or `org:bucket`."""
    if key is None or not key.startswith(org_id):
        return False
    return len(key) == len(org_id) or key[len(org_id):len(org_id) + 1] == KEY_SEPARATOR.encode()


def sequence_of(headers: Sequence[tuple[str, bytes | None]] | None, where: str) -> int:
    """The `seq` header of a domain record; a ValueError naming `where` if it has none."""
    for name, value in headers or ():
        if name == "seq" and value is not None and value.isdigit():
            return int(value)
    raise ValueError(f"{where}: no numeric seq header (not a record rekey sequenced)")


def in_sequence_order(records: Iterable[tuple[bytes, int, T]]) -> list[T]:
    """(key, sequence, record) triples as records, key after key in the order each key was first read, each
    key's records by sequence."""
    by_key: dict[bytes, list[tuple[int, T]]] = {}
    for key, sequence, record in records:
        by_key.setdefault(key, []).append((sequence, record))
    return [record for rows in by_key.values() for _sequence, record in sorted(rows, key=lambda row: row[0])]

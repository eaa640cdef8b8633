"""The migrations topic's one reader and writer: each consumer group's migration and each verification's result.

The compacted topic the catalog gives the role `migrations` holds, latest record per key:
- `group/<group>/<family>`: a group's migration between the family and its sources (its step, its boundary,
  its start offsets, what it was told it sees again), rewritten at every step;
- `verify/<sources>/<family>`: the last `rekey verify` of the sources (joined by `+`) into the family.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Producer

from kafka_rekey.services.kafka.reading import iter_topic
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.migration import Boundary, boundary_from_json, boundary_to_json

GROUP_PREFIX, VERIFY_PREFIX = "group/", "verify/"
MOVING, MOVED, ROLLING_BACK, ROLLED_BACK = "moving", "moved", "rolling-back", "rolled-back"
"""The steps of a migration: its offsets are being committed on the family, are there; the same on the way back."""


def migrations_topic(catalog: Catalog) -> str:
    """The catalog's migrations topic, or a ValueError saying how to declare one."""
    if catalog.migrations_topic is None:
        raise ValueError("the catalog declares no topic with role 'migrations' (e.g. rekey_migrations_v1, "
                         "compacted): `rekey migrate` keeps each group's boundary there")
    return catalog.migrations_topic


@dataclass
class Migration:
    """One consumer group's move between `sources` and `family`."""

    group: str
    family: str
    sources: list[str]
    step: str
    boundary: dict[str, Any] = field(default_factory=dict)
    """`boundary_to_json` of what the group had consumed of each source partition."""
    start_offsets: dict[str, int] = field(default_factory=dict)
    """`topic/partition` -> the offset committed for the group: on the family moving, on the sources back."""
    previous_offsets: dict[str, int] = field(default_factory=dict)
    """The group's committed offsets before the step, every topic's (what a retried step restores)."""
    redelivered: int = 0
    new_sources: int = 0
    scanned: int = 0
    at_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def key(self) -> bytes:
        return f"{GROUP_PREFIX}{self.group}/{self.family}".encode()

    def consumed(self) -> Boundary:
        return boundary_from_json(self.boundary)

    def with_boundary(self, boundary: Boundary) -> Migration:
        self.boundary = boundary_to_json(boundary)
        return self


@dataclass
class Verification:
    """The last `rekey verify` of `sources` into `family`."""

    sources: list[str]
    family: str
    ok: bool
    summary: dict[str, Any] = field(default_factory=dict)
    at_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def key(self) -> bytes:
        return verify_key(self.sources, self.family)


def verify_key(sources: list[str], family: str) -> bytes:
    return f"{VERIFY_PREFIX}{'+'.join(sorted(sources))}/{family}".encode()


@dataclass
class MigrationsTopic:
    migrations: dict[tuple[str, str], Migration] = field(default_factory=dict)
    """(group, family) -> its migration."""
    verifications: dict[bytes, Verification] = field(default_factory=dict)

    def verified(self, sources: list[str], family: str) -> bool | None:
        """The last verification of exactly these sources into the family, or of any set holding them all."""
        exact = self.verifications.get(verify_key(sources, family))
        if exact is not None:
            return exact.ok
        covering = [v for v in self.verifications.values() if v.family == family and set(sources) <= set(v.sources)]
        return max(covering, key=lambda v: v.at_ms).ok if covering else None

    def of_group(self, group: str) -> list[Migration]:
        return [m for (g, _), m in self.migrations.items() if g == group]


def read_migrations(config: Mapping[str, Any], topic: str) -> MigrationsTopic:
    state = MigrationsTopic()
    for message in iter_topic(dict(config), topic):
        key = message.key() or b""
        value = message.value()
        if key.startswith(GROUP_PREFIX.encode()):
            group, _, family = key[len(GROUP_PREFIX):].decode().rpartition("/")
            if value is None:
                state.migrations.pop((group, family), None)
            else:
                state.migrations[(group, family)] = Migration(**json.loads(value))
        elif key.startswith(VERIFY_PREFIX.encode()):
            if value is None:
                state.verifications.pop(key, None)
            else:
                state.verifications[key] = Verification(**json.loads(value))
    return state


def write(config: Mapping[str, Any], topic: str, record: Migration | Verification) -> None:
    """Write one record and wait until the broker has it."""
    producer = Producer({**config, "enable.idempotence": True, "acks": "all"})
    failures: list[str] = []
    producer.produce(topic, json.dumps(asdict(record)).encode(), record.key,
                     on_delivery=lambda error, _message: failures.append(str(error)) if error else None)
    remaining = producer.flush(30)
    if remaining or failures:
        raise RuntimeError(f"{topic}: the {record.key.decode()} record was not written: "
                           f"{failures[0] if failures else 'not delivered within 30 s'}")

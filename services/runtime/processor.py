"""What a service gives the runtime: the topics it reads, the tables it keeps, and a batch function.

`process` receives one consumed batch of its own topics (never a record twice within a checkpoint), writes
through `Outputs` and returns the batch's size in items: its records, a record carrying many items (the ACL's
internal records of many envelopes) counting each. The worker sizes its batches by items; stateful processors
read and write `Table`s of the record's input partition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka import Message

from kafka_rekey.services.runtime.state import Table


@dataclass(frozen=True)
class TableSpec:
    """A changelogged table kept per partition of `input_topic`; `changelog_config` are its topic configs.
    `batched`: its keys are only ever added, and expire with the changelog's retention: a checkpoint writes its
    changes in a few changelog records of many keys each (`Table.changelog_messages`). `recent_keys`: how many
    stored values of recently used keys each partition's table keeps in memory (`Table.recent`), for keys that
    are read again and again."""

    name: str
    input_topic: str
    changelog: str
    changelog_config: dict[str, str]
    batched: bool = False
    recent_keys: int = 0


class Outputs(Protocol):
    def produce(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
                headers: list[tuple[str, bytes]] | None = None) -> None: ...

    def partitions(self, topic: str) -> int:
        """The partition count of one of the worker's internal topics (for records a processor places itself)."""
        ...


TableLookup = Callable[[str, int], Table]


class Processor(Protocol):
    @property
    def topics(self) -> Sequence[str]: ...

    @property
    def tables(self) -> Sequence[TableSpec]: ...

    def process(self, messages: Sequence[Message], outputs: Outputs, tables: TableLookup) -> int: ...

"""A stream to migrate: a private catalog on the session broker, generated source traffic with duplicates and
poison pills, a plain consumer group reading the source, the backfill, the live ACL and `rekey verify`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Message
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app
from kafka_rekey.services.generation import generate_to_topic
from kafka_rekey.services.migration.context import Family, family_of
from kafka_rekey.services.migration.groups import high_watermarks, offsets_on
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.services import acl_env
from tests.support.waiting import wait_until

FAMILY = "interaction_events"


def rekey(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def consume(bootstrap: str, group: str, topics: list[str], until: int | None = None,
            idle: float = 5.0) -> Iterator[Message]:
    """The group's records of `topics` from its committed offsets, `until` many (all there are: `idle` seconds
    without one), committed as they are read, then the consumer leaves the group."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe(topics)
    read = 0
    try:
        quiet = 0.0
        while until is None or read < until:
            batch = consumer.consume(min(500, (until - read) if until else 500), timeout=0.5)
            records = [m for m in batch if m.error() is None]
            quiet = 0.0 if records else quiet + 0.5
            if not records and quiet >= idle and (until is None or read):
                break
            for message in records:
                read += 1
                yield message
            if records:
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def position(message: Message) -> SourcePosition:
    return SourcePosition(message.topic() or "", message.partition() or 0, message.offset() or 0)


@dataclass
class Stream:
    """The catalog, its family's sources, the ACL's group and the CLI's common options."""

    path: Path
    catalog: Catalog
    bootstrap: str
    registry: str
    workdir: Path
    sources: list[str]
    acl_group: str = field(default_factory=lambda: f"rekey-acl-{uuid.uuid4().hex[:8]}")
    acl: ServiceProcess | None = None

    @property
    def options(self) -> list[str]:
        return ["--catalog", str(self.path), "-b", self.bootstrap]

    @property
    def topics(self) -> list[str]:
        return list(self.catalog.family(FAMILY).output_topics)

    def family(self) -> Family:
        return family_of(self.catalog, {"bootstrap.servers": self.bootstrap}, FAMILY, self.acl_group)

    def generate(self, source: str, events: int, seed: int) -> None:
        declared = next(s for s in self.catalog.sources if s.name == source)
        generate_to_topic(self.bootstrap, source, events, 12, hot_orgs=("org-acme", "org-initech"),
                          malformed_rate=0.02, duplicate_rate=0.03, source_format=declared.format or "ccaas-json",
                          seed=seed)

    def start_acl(self) -> None:
        env = acl_env(self.bootstrap, self.registry, self.path, self.workdir / "state", app_id=self.acl_group)
        self.acl = ServiceProcess("acl", env, self.workdir, name=f"acl-{uuid.uuid4().hex[:6]}").start()

    def drained(self) -> None:
        """Wait until the ACL committed every source record and nothing is in flight to the family."""
        family = self.family()
        partitions = [tp for tp in family.source_partitions if tp[0] in self.sources]

        def caught_up() -> bool:
            ends = high_watermarks(family.config, partitions)
            acl = offsets_on(family.config, self.acl_group, partitions)
            return all(acl.get(tp, 0) >= end for tp, end in ends.items() if end) and family.in_flight() == 0

        wait_until(caught_up, 180, f"the ACL {self.acl_group} caught up with {self.sources}", interval=0.5)

    def verify(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("REKEY_REGISTRY_URL", self.registry)
        args = ["verify", *(a for s in self.sources for a in ("--source", s)), "--target-family", FAMILY,
                "--live-group", self.acl_group, "-o", "json", *self.options]
        code, output = rekey(*args)
        assert code == 0, output

    def published(self) -> dict[SourcePosition, int]:
        """Every source position the family holds, with how many records carry it."""
        counts: dict[SourcePosition, int] = {}
        for message in consume(self.bootstrap, f"reader-{uuid.uuid4().hex[:8]}", self.topics, idle=3.0):
            source = dict(message.headers() or [])["src"].decode()
            counts[SourcePosition.parse(source)] = counts.get(SourcePosition.parse(source), 0) + 1
        return counts

    def stop(self) -> None:
        if self.acl is not None:
            self.acl.stop()


@pytest.fixture
def stream(provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str,
           tmp_path: Path) -> Iterator[Stream]:
    path, catalog = provisioned_catalog
    sources = [s.name for s in catalog.sources if FAMILY in s.feeds]
    made = Stream(path, catalog, kafka_bootstrap, schema_registry_url, tmp_path, sources)
    try:
        yield made
    finally:
        made.stop()


def move(stream: Stream, group: str, source: str) -> dict[str, Any]:
    code, output = rekey("migrate", "consumers", "--group", group, "--source", source, "--family", FAMILY,
                         "--acl-group", stream.acl_group, "-o", "json", *stream.options)
    assert code == 0, output
    document: dict[str, Any] = json.loads(output.splitlines()[-1])
    return document


def console_consumer_starts(bootstrap: str, group: str, topic: str, records: int, timeout_ms: int = 15000
                            ) -> dict[int, int]:
    """Kafka's own ConsoleConsumer (kafka-tools at the broker's version) run as `group` on `topic`, read_committed,
    committing nothing: the first offset it reads on each partition."""
    import re
    import subprocess

    from kafka_rekey_dev.embedded.maven import KAFKA_VERSION, require_java, resolve

    classpath = f"{resolve(f'kafka-tools-{KAFKA_VERSION}')}/*"
    ran = subprocess.run(
        [require_java(), "-cp", classpath, "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", bootstrap, "--topic", topic, "--group", group, "--isolation-level", "read_committed",
         "--consumer-property", "enable.auto.commit=false", "--max-messages", str(records),
         "--timeout-ms", str(timeout_ms), "--property", "print.partition=true", "--property", "print.offset=true",
         "--property", "print.value=false"],
        capture_output=True, text=True, timeout=120, check=False)
    starts: dict[int, int] = {}
    for partition, offset in re.findall(r"Partition:(\d+)\s+Offset:(\d+)", ran.stdout):
        starts.setdefault(int(partition), int(offset))
    assert starts or records == 0, (ran.stdout[-2000:], ran.stderr[-2000:])
    return starts

"""`rekey migrate` refuses bad input and unsafe moves in one line each, and leaves the group's offsets as they
were (read back from the broker)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from kafka_rekey.services.kafka.offsets import committed_offsets
from tests.services.migration.conftest import FAMILY, Stream, consume, rekey
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker]


def _offsets(stream: Stream, group: str, source: str) -> dict[tuple[str, int], int]:
    partitions = [(source, p) for p in range(next(s for s in stream.catalog.sources if s.name == source).partitions)]
    family = [(t, p) for t in stream.topics for p in range(stream.catalog.topic(t).partitions)]
    return committed_offsets({"bootstrap.servers": stream.bootstrap}, group, partitions + family)


def _one_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_bad_input_and_unsafe_moves_are_refused_with_nothing_changed(stream: Stream) -> None:
    source = next(s.name for s in stream.catalog.sources if s.format == "ccaas-json")
    stream.generate(source, 300, seed=3)
    group = f"reports-{uuid.uuid4().hex[:8]}"
    for _ in consume(stream.bootstrap, group, [source], until=100):
        pass
    before = _offsets(stream, group, source)
    assert sum(o for o in before.values() if o > 0) >= 100

    def attempt(*args: str) -> tuple[int, str]:
        return rekey("migrate", "consumers", *args, "--acl-group", stream.acl_group, *stream.options)

    code, output = attempt("--group", "nobody-here", "--source", source, "--family", FAMILY)
    assert code == 3 and "has no committed offsets on" in _one_line(output), output
    code, output = attempt("--group", group, "--source", "not.a.source", "--family", FAMILY)
    assert code == 2 and "is not a source of the catalog" in _one_line(output), output
    code, output = attempt("--group", group, "--source", source, "--family", stream.catalog.org_activity_topic)
    assert code == 2 and "carry no source position" in _one_line(output), output
    code, output = attempt("--group", group, "--source", source, "--family", FAMILY)
    assert code == 3 and f"family {FAMILY!r} is not ready" in _one_line(output), output
    assert "no `rekey verify`" in output and "records behind the group" in output, output

    running = threading.Event()
    stop = threading.Event()

    def member() -> None:
        consumer = Consumer({"bootstrap.servers": stream.bootstrap, "group.id": group, "enable.auto.commit": False})
        consumer.subscribe([source], on_assign=lambda *_: running.set())
        while not stop.is_set():
            consumer.poll(0.2)
        consumer.close()

    thread = threading.Thread(target=member)
    thread.start()
    try:
        wait_until(running.is_set, 60, "the group's member got its partitions")
        code, output = attempt("--group", group, "--source", source, "--family", FAMILY)
        assert code == 3 and "active member" in _one_line(output), output
    finally:
        stop.set()
        thread.join(30)
    assert _offsets(stream, group, source) == before


def test_a_catalog_without_a_migrations_topic_is_a_usage_error(stream: Stream, tmp_path: Path) -> None:
    text = stream.path.read_text()
    start = text.index(f"  - name: {stream.catalog.migrations_topic}")
    end = text.index("  - name:", start + 10)
    bare = tmp_path / "bare.yaml"
    bare.write_text(text[:start] + text[end:])
    code, output = rekey("migrate", "status", "--catalog", str(bare), "-b", stream.bootstrap)
    assert code == 2 and "declares no topic with role 'migrations'" in _one_line(output), output


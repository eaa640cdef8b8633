"""The chaos traffic against the real broker: `wait_next_chunk` wakes on a paced chunk the moment its records are
acknowledged, and says when there is none left to wait for (the kill scenario stops its worker on it);
`send_rest_unpaced` sends the chunks still to come without their pauses."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_rekey_dev.chaos.traffic import Traffic, TrafficPlan
from tests.support.kafka import end_offsets

pytestmark = pytest.mark.broker


def test_wait_next_chunk_returns_once_a_paced_chunk_is_on_the_topic_and_false_when_all_are_sent(
        kafka_bootstrap: str, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=3, prefix="chaos-traffic")
    traffic = Traffic(kafka_bootstrap, topic, TrafficPlan(400, upfront=0.5, chunks=2, pause=0.5), tmp_path)
    traffic.send_upfront()
    traffic.start()
    assert traffic.wait_next_chunk(30)
    assert sum(end_offsets(kafka_bootstrap, topic).values()) >= 300  # the upfront 200 and the first chunk's 100
    assert traffic.wait_next_chunk(30)
    traffic.join(30)
    assert sum(end_offsets(kafka_bootstrap, topic).values()) == traffic.records == 400

    started = time.monotonic()
    assert not traffic.wait_next_chunk(30)  # every chunk sent: nothing to wait for
    assert time.monotonic() - started < 5


def test_the_chunks_still_to_come_are_sent_at_once_when_asked(
        kafka_bootstrap: str, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    """After a scenario's last fault the pacing is dropped: the rest arrives without waiting out the pauses."""
    topic = topic_factory(partitions=3, prefix="chaos-traffic")
    traffic = Traffic(kafka_bootstrap, topic, TrafficPlan(400, upfront=0.0, chunks=4, pause=60.0), tmp_path)
    traffic.start()
    traffic.send_rest_unpaced()
    traffic.join(30)  # a TimeoutError if the chunks waited out their pauses
    assert sum(end_offsets(kafka_bootstrap, topic).values()) == traffic.records == 400

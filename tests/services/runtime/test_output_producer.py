"""OutputProducer's record of failed outputs: the first since the last checkpoint is logged, the checkpoint that
fails counts them all (a fenced producer drops every output it still holds)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from kafka_rekey.services.runtime.failures import CheckpointFailed
from kafka_rekey.services.runtime.output_producer import OutputProducer

UNREACHABLE = {"bootstrap.servers": "127.0.0.1:9", "transactional.id": "rekey-test-output-producer"}


def _logged(logs: list[MutableMapping[str, Any]]) -> list[object]:
    return [line["output"] for line in logs if line["event"] == "output not delivered: the next commit is blocked"]


def test_a_burst_of_failed_outputs_is_one_line_and_the_failed_checkpoint_counts_them() -> None:
    producer = OutputProducer(UNREACHABLE)
    with capture_logs() as logs:
        for partition in range(3):
            producer.output_failed(f"out[{partition}]: fenced")
    assert _logged(logs) == ["out[0]: fenced"]
    with pytest.raises(CheckpointFailed, match=r"refused 3 outputs \(first: out\[0\]: fenced\)"):
        producer.check_usable()


def test_the_first_failure_after_the_failures_were_dropped_is_logged_again() -> None:
    producer = OutputProducer(UNREACHABLE)
    producer.output_failed("out[0]: fenced")
    producer.abort()
    with capture_logs() as logs:
        producer.output_failed("out[1]: fenced")
    assert _logged(logs) == ["out[1]: fenced"]

"""`rekey_checkpoint_failures_total` counts each failed checkpoint of a worker by reason (the dashboard's and the
alerts' checkpoint failures), driven through the worker harness of test_worker."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError
from prometheus_client import REGISTRY

from tests.services.runtime.test_worker import FakeProducer, harness


def _failures(reason: str) -> float:
    return REGISTRY.get_sample_value("rekey_checkpoint_failures_total",
                                     {"service": "test-worker", "reason": reason}) or 0.0


def test_a_refused_offset_commit_counts_as_a_failed_commit(tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=False)
    h.cluster.append(0, "a0", "a1")
    h.consumer.rebalance("assign", 0)
    h.consumed()
    before = _failures("commit_failed")
    h.cluster.offset_commit_refusals = 1
    h.checkpoint()
    assert _failures("commit_failed") == before + 1

    h.consumed()
    h.checkpoint()
    assert _failures("commit_failed") == before + 1, "a checkpoint that commits is no failure"


def test_an_aborted_transaction_and_a_fenced_producer_count_by_reason(tmp_path: Path) -> None:
    h = harness(tmp_path, exactly_once=True)
    h.cluster.append(0, "a0", "a1")
    h.consumer.rebalance("assign", 0)
    h.consumed()
    before = {reason: _failures(reason) for reason in ("commit_failed", "producer_fatal", "producer_stuck")}
    h.cluster.commit_failures = [KafkaError(KafkaError.INVALID_TXN_STATE, "must abort", txn_requires_abort=True)]
    h.checkpoint()
    h.consumed()
    FakeProducer({"transactional.id": "group-w1", "on_delivery": None}, h.cluster).init_transactions(1)
    h.checkpoint()
    counted = {reason: _failures(reason) - before[reason] for reason in before}
    assert counted == {"commit_failed": 1, "producer_fatal": 1, "producer_stuck": 0}

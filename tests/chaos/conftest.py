"""Chaos fixtures: a private catalog on the session broker (or on the 3-node cluster with RF=3, min ISR 2).

`REKEY_CHAOS_RECORD=1` makes each test write its figures as a row of docs/RELIABILITY.md."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from rich.console import Console

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.topics.apply import apply_catalog
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.chaos.harness import PASSED, ChaosEnv, ChaosResult
from kafka_rekey_dev.chaos.report import print_result, record
from kafka_rekey_dev.embedded.kafka import KafkaCluster
from tests.support.waiting import wait_until


@pytest.fixture
def chaos_env(provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str,
              tmp_path: Path) -> ChaosEnv:
    path, catalog = provisioned_catalog
    return ChaosEnv(kafka_bootstrap, schema_registry_url, path, catalog, tmp_path)


@pytest.fixture
def chaos_env3(catalog_factory: Callable[..., Path], embedded_cluster3: KafkaCluster, schema_registry_url: str,
               tmp_path: Path) -> ChaosEnv:
    path = catalog_factory()
    catalog = load_catalog(path)
    config = {"bootstrap.servers": embedded_cluster3.bootstrap_servers}
    apply_catalog(catalog, config, replication_factor=3, min_insync_replicas=2)
    names = [t.name for t in catalog.provisioned_topics()]
    # Closed on exit: an AdminClient left to the garbage collector can be destroyed on a librdkafka thread.
    with AdminClient(config) as admin:
        def visible() -> bool:  # every broker must know the new topics before producers and workers use them
            topics = admin.list_topics(timeout=10).topics
            return all(n in topics and topics[n].error is None and topics[n].partitions for n in names)

        wait_until(visible, 60, "catalog topics visible in the 3-node cluster's metadata")
    return ChaosEnv(embedded_cluster3.bootstrap_servers, schema_registry_url, path, catalog, tmp_path,
                    cluster=embedded_cluster3, internal_replication=3)


def assert_passed(result: ChaosResult, request: pytest.FixtureRequest) -> None:
    """Print the figures, record them when asked, and fail on any violation or a fault that did not land."""
    print_result(result, Console(width=160))
    if os.environ.get("REKEY_CHAOS_RECORD"):
        record(result, f"`pytest {request.node.nodeid}`")
    assert result.status == PASSED, (result.status, result.violations, result.failures,
                                     [f.describe() for f in result.invalid_faults],
                                     {f: (r.lost[:3], r.gaps[:3], r.out_of_order[:3], r.conflicting[:3])
                                      for f, r in result.reports.items()})
    if result.exactly_once:
        assert result.total("duplicates") == 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Full-scale soak runs only when asked for with `-m soak` (`make soak`), never in a plain `pytest`."""
    if "soak" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="full-scale soak run: `make soak` (pytest -m soak)")
    for item in items:
        if item.get_closest_marker("soak"):
            item.add_marker(skip)

"""The chart works as rendered: for every ci scenario, each Job's, Deployment's and StatefulSet's own command and
environment runs locally against the embedded stack (the 3-node cluster, since the chart's catalog asks for
replication 3 and min.insync.replicas 2; the registry; PostgreSQL) and does its job: a Job completes, a service's
readiness probe answers 200, and on SIGTERM it exits 0 within its grace period. A StatefulSet's pod keeps its state
on its volume claim under its own name as worker id, and is ready again when restarted on it.

What is substituted and why is in `workloads.py`; everything else (arguments, catalog from the ConfigMap,
processing guarantee, sink table and topic, application ids, log level) is what the chart rendered. A
SparkApplication (Spark Operator scenario) is not a process the test can start; its rendering is tested elsewhere.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_rekey.shared.catalog import parse_catalog
from kafka_rekey_dev.embedded.kafka import KafkaCluster
from kafka_rekey_dev.embedded.processes import terminate_with_parent
from tests.helm.rekey.rendering import CI_SCENARIOS, Manifests, containers, render_ci
from tests.helm.rekey.workloads import LocalWorkload, Stack, local_workload

pytestmark = [pytest.mark.cluster, pytest.mark.registry, pytest.mark.postgres]

SCENARIOS = [pytest.param(s, marks=pytest.mark.spark) if s == "backfill-values" else s for s in CI_SCENARIOS]
READY_SECONDS = 120.0
JOB_SECONDS = 300.0


def _job_order(obj: dict[str, Any]) -> tuple[bool, int]:
    """Helm's hooks (the topics Job) first: the services and a backfill need the topics; on a cluster they retry
    until the post-install hook has created them, here they run after it."""
    annotations = obj["metadata"].get("annotations") or {}
    return "helm.sh/hook" not in annotations, int(annotations.get("helm.sh/hook-weight", 0))


def _create_external_sources(manifests: Manifests, bootstrap: str) -> None:
    """The sources rekey does not manage exist upstream on a real cluster: create them as the catalog sizes them."""
    text = manifests.get("ConfigMap", "demo-rekey-catalog")["data"]["catalog.yaml"]
    catalog = parse_catalog(text, "catalog.yaml")
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        existing = admin.list_topics(timeout=30).topics
        missing = [NewTopic(s.name, s.partitions, 3) for s in catalog.sources
                   if not s.managed and s.name not in existing]
        for future in admin.create_topics(missing).values() if missing else ():
            future.result(30)


class Running:
    def __init__(self, workload: LocalWorkload, logs: Path, run: str = "") -> None:
        self.workload = workload
        self.log = logs / (workload.label.replace("/", "_") + run + ".log")
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(workload.argv, env=workload.env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True, preexec_fn=terminate_with_parent)

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])

    def ready(self) -> bool:
        assert self.workload.ready_url is not None
        assert self.process.poll() is None, f"{self.workload.label} exited {self.process.returncode}:\n{self.tail()}"
        try:
            return httpx.get(self.workload.ready_url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def _wait_ready(services: list[Running], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    waiting = list(services)
    while waiting:
        waiting = [r for r in waiting if not r.ready()]
        if waiting and time.monotonic() > deadline:
            raise AssertionError(f"{waiting[0].workload.label} not ready in {seconds:.0f}s:\n{waiting[0].tail()}")
        if waiting:
            time.sleep(0.5)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_rendered_workload_runs(scenario: str, embedded_cluster3: KafkaCluster, schema_registry_url: str,
                                     postgres_test_dsn: str, tmp_path: Path) -> None:
    manifests = render_ci(scenario)
    stack = Stack(kafka={"bootstrap_servers": embedded_cluster3.bootstrap_servers, "security_protocol": "PLAINTEXT"},
                  registry_url=schema_registry_url, secrets={"REKEY_SINK_DATABASE_URL": postgres_test_dsn})
    _create_external_sources(manifests, embedded_cluster3.bootstrap_servers)
    logs = tmp_path / "logs"
    logs.mkdir()

    def workloads(kind: str) -> list[LocalWorkload]:
        objects = sorted(manifests.all(kind), key=_job_order)
        return [local_workload(manifests, obj, container, stack, tmp_path / obj["metadata"]["name"])
                for obj in objects for _, container in containers(obj)]

    for job in workloads("Job"):
        run = Running(job, logs)
        try:
            code = run.process.wait(JOB_SECONDS)
        finally:
            run.kill()
        assert code == 0, f"{job.label} exited {code}:\n{run.tail()}"

    stateful = workloads("StatefulSet")
    services = [Running(service, logs) for service in workloads("Deployment") + stateful]
    assert services, f"{scenario} renders no Deployment or StatefulSet"
    _serve(services)
    for service in stateful:
        data = Path(service.env["REKEY_DATA_DIR"])
        assert [path.name for path in data.iterdir()], f"{service.label}: no state on its volume claim"
        assert not list(data.rglob("worker-id")), f"{service.label}: a worker id was generated, not the pod's name"
    _serve([Running(service, logs, "-restarted") for service in stateful])


def _serve(services: list[Running]) -> None:
    """Wait until every service is ready, then stop each with SIGTERM: each exits 0 within its grace period."""
    try:
        _wait_ready(services, READY_SECONDS)
        for service in services:
            service.process.send_signal(signal.SIGTERM)
        for service in services:
            code = service.process.wait(service.workload.grace_seconds)
            assert code == 0, f"{service.workload.label} exited {code} on SIGTERM:\n{service.tail()}"
    finally:
        for service in services:
            service.kill()

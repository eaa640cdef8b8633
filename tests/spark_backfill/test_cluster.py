"""The backfill on a real Spark standalone cluster (rekey's embedded one: a master, two one-core workers).

One application, started from another directory, runs there as on any cluster: executors in JVMs of their own
(one per worker), Python workers in processes of their own importing rekey from the pyFiles archive shipped with
the job (not from the checkout or the driver's cwd), the shuffle read across executors; and the backfill it then
runs on the same executors gives what the local one does, with a hand-off the live ACL continues from. Both tests
read that one application's findings: an application's start-up (a driver and two executor JVMs) is most of
what a small job costs there. `rekey backfill --master spark://...` itself runs on the cluster in
tests/chaos/test_backfill.py, with its executors' Python workers and one executor JVM killed in the write stage.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.services.generation import generate_to_topic
from kafka_rekey.services.kafka.topics import create_topics
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey.shared.handoff import sequence_key
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey.spark_backfill.jobs.verify import VerifyRequest, run_verify
from kafka_rekey_dev.embedded.spark import SparkCluster
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.fixtures.catalog import REPO_CATALOG, isolate_catalog_text
from tests.support.kafka import Record, read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.broker]

CHECKOUT = Path(__file__).resolve().parents[2]
EVENTS = 3000
FAMILY = "interaction_events"
LIVE = 200
REPORTED = "cluster probe: "

# Run in a process of its own from another directory: where each task's Python worker imported rekey from, the
# executor JVM it runs under, a shuffle, then the backfill on the same executors; it reports, then holds the
# application until its stdin closes.
PROBE = r"""
import json, os, sys
from pathlib import Path
from pyspark import TaskContext
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
from kafka_rekey.spark_backfill.session import build_session

def executor_of(pid):
    while pid > 1:
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args:
            return {"pid": pid, "id": args[args.index(b"--executor-id") + 1].decode()}
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    return None

def where(rows):
    from kafka_rekey import shared
    yield {"partition": TaskContext.get().partitionId(), "python_pid": os.getpid(),
           "executor": executor_of(os.getpid()), "shared": shared.__file__, "cwd": os.getcwd()}

spark = build_session("rekey-cluster-probe", sys.argv[1], ui=True, conf=json.loads(sys.argv[2]))
sc = spark.sparkContext
tasks = sc.parallelize(range(8), 8).mapPartitions(where).collect()
groups = sc.parallelize(range(40000), 4).map(lambda x: (x % 101, x)).groupByKey(4).mapValues(len).collect()
job = json.loads(sys.argv[3])
report = run_backfill(spark, BackfillRequest([job["source"]], job["family"], Path(job["catalog"])),
                      KafkaSettings(bootstrap_servers=job["bootstrap"]), RegistrySettings(url=job["registry"]))
print("cluster probe: " + json.dumps({"tasks": tasks, "groups": sorted(groups), "ui": sc.uiWebUrl,
                                      "app": sc.applicationId, "backfill": report.to_json()}), flush=True)
sys.stdin.read()
spark.stop()
"""


@dataclass
class ClusterRun:
    """What the probe application found, and the cluster's view while it ran."""

    catalog_path: Path
    catalog: Catalog
    source: str
    archive: Path
    cluster_dir: Path
    driver_pid: int
    cwd: Path
    seen: dict[str, Any]
    status: dict[str, Any]
    remote_shuffle_bytes: int

    @property
    def report(self) -> dict[str, Any]:
        return dict(self.seen["backfill"])


def _remote_shuffle_bytes(ui: str, app: str) -> int:
    """Shuffle bytes the application's stages read from the other executor; 0 while its UI does not answer."""
    try:
        stages = httpx.get(f"{ui}/api/v1/applications/{app}/stages", params={"status": "complete"}, timeout=10)
        return sum(int(stage.get("shuffleRemoteBytesRead", 0)) for stage in stages.json())
    except httpx.HTTPError:
        return 0


@pytest.fixture(scope="module")
def cluster_run(spark_cluster: SparkCluster, kafka_admin: AdminClient, kafka_bootstrap: str,
                schema_registry_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterRun]:
    """Generated history in a private catalog, and the probe application run on the cluster over it."""
    workdir = tmp_path_factory.mktemp("cluster-run")
    path = workdir / "catalog.yaml"
    path.write_text(isolate_catalog_text(REPO_CATALOG.read_text(), uuid.uuid4().hex[:8]))
    catalog = load_catalog(path)
    create_topics(kafka_admin, catalog.provisioned_topics())
    source = next(s.name for s in catalog.sources if s.format == "ccaas-json")
    generate_to_topic(kafka_bootstrap, source, EVENTS, 12, hot_orgs=("org-acme", "org-initech"),
                      malformed_rate=0.01, duplicate_rate=0.03, late_rate=0.05, seed=17)
    conf = {**spark_cluster.session_conf(), "spark.ui.port": "0"}
    job = {"source": source, "family": FAMILY, "catalog": str(path), "bootstrap": kafka_bootstrap,
           "registry": schema_registry_url}
    cwd = workdir / "elsewhere"
    cwd.mkdir()
    probe = subprocess.Popen([sys.executable, "-c", PROBE, spark_cluster.master_url, json.dumps(conf),
                              json.dumps(job)], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert probe.stdout is not None and probe.stdin is not None
        lines = iter(probe.stdout.readline, "")
        line = next((line for line in lines if line.startswith(REPORTED)), "")
        assert line, f"the probe application exited {probe.wait(60)} before reporting"
        seen: dict[str, Any] = json.loads(line.removeprefix(REPORTED))
        shuffled = wait_until(lambda: _remote_shuffle_bytes(seen["ui"], seen["app"]), 30,
                              "shuffle blocks read from the other executor")
        yield ClusterRun(path, catalog, source, Path(conf["spark.submit.pyFiles"]), spark_cluster.data_dir,
                         probe.pid, cwd, seen, spark_cluster.status(), shuffled)
    finally:
        if probe.stdin is not None:
            probe.stdin.close()
        probe.wait(60)


def _event(record: Record) -> object:
    """A generated source record's JSON, None for a poison pill that is not JSON."""
    try:
        return json.loads(record.value or b"")
    except ValueError:
        return None


def test_tasks_run_in_executor_jvms_and_import_rekey_from_the_shipped_archive(cluster_run: ClusterRun) -> None:
    seen = cluster_run.seen
    executors = {task["executor"]["pid"] for task in seen["tasks"] if task["executor"]}
    assert len(seen["tasks"]) == 8 and all(task["executor"] for task in seen["tasks"])
    assert len(executors) == 2, seen["tasks"]  # one executor JVM per worker, neither the driver
    assert cluster_run.driver_pid not in executors
    assert cluster_run.driver_pid not in {task["python_pid"] for task in seen["tasks"]}
    for task in seen["tasks"]:
        assert task["shared"].endswith(f"{cluster_run.archive.name}/kafka_rekey/shared/__init__.py"), task
        assert not task["shared"].startswith(str(CHECKOUT)) and task["cwd"] != str(cluster_run.cwd)
        assert str(cluster_run.cluster_dir) in task["cwd"]  # a worker's work directory
    assert dict(seen["groups"]) == {k: len(range(k, 40000, 101)) for k in range(101)}
    assert cluster_run.remote_shuffle_bytes > 0  # shuffle blocks read from the other executor

    status = cluster_run.status
    assert status["ready"] and [w["state"] for w in status["workers"]] == ["ALIVE", "ALIVE"]
    assert [(a["name"], a["cores"]) for a in status["active_apps"]] == [("rekey-cluster-probe", 2)]


def test_backfill_on_the_cluster_then_the_live_acl(  # type: ignore[no-untyped-def]
        spark, cluster_run: ClusterRun, kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path) -> None:
    """A cluster run gives what a local one does (every record once, dense sequences, Java-parity partitions,
    poison pills dead-lettered), and its hand-off holds: the live ACL started from it reads exactly what the
    backfill did not and continues every key's sequence; `rekey verify` passes."""
    path, catalog, source = cluster_run.catalog_path, cluster_run.catalog, cluster_run.source
    report = cluster_run.report
    outputs = catalog.family(FAMILY).output_topics

    assert report["read"] == EVENTS
    assert report["written"] == report["events"] - report["duplicates_dropped"] > 0
    assert report["duplicates_dropped"] > 0 and sum(report["dead_lettered"].values()) > 0
    assert len(read_topic(kafka_bootstrap, catalog.dlq_topic)) == sum(report["dead_lettered"].values())
    assert sum(len(read_topic(kafka_bootstrap, t)) for t in outputs) == report["written"]
    snapshot_end = {int(p): o for p, o in report["snapshot"][0]["end"].items()}

    history = [e for e in map(_event, read_topic(kafka_bootstrap, source)[:200])
               if isinstance(e, dict) and isinstance(e.get("orgId"), str) and isinstance(e.get("interactionId"), str)
               and e["orgId"] and e["interactionId"]]
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})
    for i in range(LIVE):  # half continue interactions of the history, half start new ones
        base = history[i % len(history)]
        producer.produce(source, key=f"live-{i}".encode(), value=json.dumps({
            "orgId": base["orgId"], "interactionId": base["interactionId"] if i % 2 == 0 else f"live-{i}",
            "eventId": f"live-{uuid.uuid4()}", "eventType": "answer", "interactionType": "call",
            "timestamp": "2031-01-01T00:00:00Z", "data": {},
        }).encode())
    assert producer.flush(30) == 0
    expected = report["written"] + LIVE

    def sources_written() -> int:
        return len({r.headers["src"] for t in outputs for r in read_topic(kafka_bootstrap, t)})

    acl = ServiceProcess("acl", acl_env(kafka_bootstrap, schema_registry_url, path, tmp_path / "state"),
                         tmp_path).start()
    try:
        wait_until(lambda: sources_written() >= expected, 240, f"{expected} source records in {outputs}",
                   interval=2.0)
    finally:
        acl.stop()

    numbered: dict[tuple[str, int], str] = {}
    live = 0
    for topic in outputs:
        partitions = catalog.topic(topic).partitions
        for record in read_topic(kafka_bootstrap, topic):
            key = record.key.decode()  # type: ignore[union-attr]
            assert record.partition == partition_for(key, partitions), (topic, key)
            number = (sequence_key(topic, key), int(record.headers["seq"]))
            assert number not in numbered, f"{number} numbered twice: {numbered[number]}, {record.headers['src']!r}"
            numbered[number] = record.headers["src"].decode()
            position = SourcePosition.parse(numbered[number])
            live += position.offset >= snapshot_end[position.partition]
    assert len(numbered) == expected and live == LIVE
    per_key: dict[str, list[int]] = {}
    for key, sequence in numbered:
        per_key.setdefault(key, []).append(sequence)
    assert all(sorted(n) == list(range(1, len(n) + 1)) for n in per_key.values())
    assert any(max(n) > 1 for n in per_key.values())
    kafka, registry = KafkaSettings(bootstrap_servers=kafka_bootstrap), RegistrySettings(url=schema_registry_url)
    verified = run_verify(spark, VerifyRequest([source], [], FAMILY, path), kafka, registry)
    assert verified.ok, (verified.window_mismatches[:3], verified.key_problems[:3])

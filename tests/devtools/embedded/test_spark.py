"""The embedded Spark standalone cluster: `rekey spark start` brings up a master and two one-core workers that
register with it, `status` reports them, a second start on a port in use is refused, `stop` ends every process
of the cluster and frees its ports; and the pyFiles archive holds rekey's packages, named by their content."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import with_plugins
from kafka_rekey.spark_backfill.pyfiles import build_archive
from kafka_rekey_dev.embedded.errors import PortInUse
from kafka_rekey_dev.embedded.processes import alive, free_port, port_free
from kafka_rekey_dev.embedded.spark import SparkCluster

app = with_plugins()

pytestmark = [pytest.mark.spark]


def test_status_reports_the_master_and_two_one_core_workers(spark_cluster: SparkCluster) -> None:
    result = CliRunner().invoke(app, ["spark", "status", "--data-dir", str(spark_cluster.data_dir)])

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["ready"] and report["master"] == spark_cluster.master_url and report["cores"] == 2
    assert [(w["state"], w["cores"], w["memory_mb"]) for w in report["workers"]] == [("ALIVE", 1, 1024)] * 2


def test_a_second_cluster_on_a_port_in_use_is_refused(spark_cluster: SparkCluster, tmp_path: Path) -> None:
    other = SparkCluster(tmp_path, port=spark_cluster.state.port, ui_port=free_port(18280))

    with pytest.raises(PortInUse, match=f"port {spark_cluster.state.port} .* --port"):
        other.start(timeout=10)
    assert not other.state.pids


def test_start_then_stop_ends_every_process_and_frees_the_ports(tmp_path: Path) -> None:
    port, ui_port = free_port(17177), free_port(18380)
    runner = CliRunner()
    args = ["--data-dir", str(tmp_path)]
    started = runner.invoke(app, ["spark", "start", *args, "--port", str(port), "--ui-port", str(ui_port)])
    cluster = SparkCluster(tmp_path)
    try:
        assert started.exit_code == 0, started.output
        assert f"spark://127.0.0.1:{port}" in started.output
        pids = dict(cluster.state.pids)
        assert sorted(pids) == ["master", "worker-1", "worker-2"] and all(alive(p) for p in pids.values())
        assert cluster.ready()
    finally:
        stopped = runner.invoke(app, ["spark", "stop", *args])
    assert stopped.exit_code == 0, stopped.output
    assert not any(alive(pid) for pid in pids.values())
    assert port_free(port) and port_free(ui_port)
    status = runner.invoke(app, ["spark", "status", *args])
    assert status.exit_code == 3 and json.loads(status.output)["running"] is False


def test_the_archive_holds_the_packages_and_is_named_by_their_content(tmp_path: Path) -> None:
    first, again = build_archive(tmp_path), build_archive(tmp_path / "elsewhere")

    assert first.name == again.name and first.read_bytes() == again.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    for needed in ("kafka_rekey/shared/__init__.py", "kafka_rekey/shared/schemas/interaction_event.avsc",
                   "kafka_rekey/spark_backfill/transform.py",
                   "kafka_rekey/services/registry/client.py"):
        assert needed in names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]

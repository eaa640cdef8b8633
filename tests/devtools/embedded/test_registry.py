"""`rekey registry start|status|stop` drive a real embedded registry whose schemas survive a restart."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import with_plugins
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.settings import RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey_dev.embedded.processes import alive, free_port, port_free
from kafka_rekey_dev.embedded.registry import SchemaRegistryServer
from tests.support.waiting import wait_until

app = with_plugins()

pytestmark = pytest.mark.registry


def test_start_status_stop_and_restart_keeps_schemas(tmp_path: Path) -> None:
    runner = CliRunner()
    port = free_port(18500)
    args = ["--data-dir", str(tmp_path)]
    try:
        started = runner.invoke(app, ["registry", "start", *args, "--port", str(port)])
        assert started.exit_code == 0, started.output
        status = runner.invoke(app, ["registry", "status", *args])
        assert status.exit_code == 0, status.output
        report = json.loads(status.output)
        assert report["ready"] and report["url"] == f"http://127.0.0.1:{port}/apis/ccompat/v7"

        with SchemaRegistryClient(RegistrySettings(url=report["url"])) as client:
            schema_id = client.register("persisted-value", load_schema("interaction_event"))
            client.set_compatibility("persisted-value", "FULL")

        assert runner.invoke(app, ["registry", "start", *args]).exit_code == 0  # already running: a no-op
        elsewhere = runner.invoke(app, ["registry", "start", *args, "--port", str(port + 1)])
        assert elsewhere.exit_code == 2 and f"already runs on port {port}" in " ".join(elsewhere.output.split())

        assert runner.invoke(app, ["registry", "stop", *args]).exit_code == 0
        assert port_free(port)
        assert runner.invoke(app, ["registry", "status", *args]).exit_code == 3

        assert runner.invoke(app, ["registry", "start", *args]).exit_code == 0  # on the port it last used
        with SchemaRegistryClient(RegistrySettings(url=report["url"])) as client:
            assert client.schema_by_id(schema_id).parsed["name"] == "dev.rekey.domain.InteractionEvent"
            breaking = load_schema("interaction_event")
            breaking["fields"].append({"name": "queue_id", "type": "string"})
            assert client.test_compatibility("persisted-value", breaking) is False
    finally:
        SchemaRegistryServer(tmp_path).stop()


def test_start_on_a_busy_port_says_which_port(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        result = CliRunner().invoke(app, ["registry", "start", "--data-dir", str(tmp_path), "--port", str(busy)])
    assert result.exit_code == 2
    assert f"port {busy} on 127.0.0.1 is in use" in " ".join(result.output.split())
    assert not SchemaRegistryServer(tmp_path).running()


def test_a_registry_tied_to_its_caller_stops_when_the_caller_is_killed(tmp_path: Path) -> None:
    owner = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kafka_rekey_dev.embedded.registry import SchemaRegistryServer\n"
        f"server = SchemaRegistryServer(Path({str(tmp_path)!r}), port={free_port(18600)})\n"
        "server.start(timeout=120, die_with_caller=True)\n"
        "print(server.state.pid, flush=True)\n"
        "sys.stdin.read()\n"  # hold on until killed
    )
    caller = subprocess.Popen([sys.executable, "-c", owner], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert caller.stdout is not None
        pid = int(caller.stdout.readline())
        assert alive(pid)
        caller.kill()
        caller.wait(10)
        wait_until(lambda: not alive(pid), 30, f"registry {pid} outlived its killed caller")
    finally:
        caller.kill()
        SchemaRegistryServer(tmp_path).stop()

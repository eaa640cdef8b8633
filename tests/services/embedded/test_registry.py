"""`rekey registry start|status|stop` drive a real embedded registry whose schemas survive a restart."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.cli.main import app
from services.embedded.processes import free_port, port_free
from services.embedded.registry import SchemaRegistryServer
from services.registry.client import SchemaRegistryClient
from services.settings import RegistrySettings
from shared.avro import load_schema

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

        assert runner.invoke(app, ["registry", "stop", *args]).exit_code == 0
        assert port_free(port)
        assert runner.invoke(app, ["registry", "status", *args]).exit_code == 1

        assert runner.invoke(app, ["registry", "start", *args, "--port", str(port)]).exit_code == 0
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
    assert f"port {busy}" in result.output and "in use" in result.output
    assert not SchemaRegistryServer(tmp_path).running()

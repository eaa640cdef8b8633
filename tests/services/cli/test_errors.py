"""Errors outside the code's own bugs end a command with one line and their exit code: 1 when a service is out
of reach, 2 for a bad argument or setting."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from kafka_rekey.services.cli.errors import user_errors
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey_dev.embedded.processes import free_port


def _command(action):  # type: ignore[no-untyped-def]
    app = typer.Typer()

    @app.command()
    def main() -> None:
        with user_errors():
            action()

    return app


def test_an_unreachable_registry_is_one_line_and_exit_1() -> None:
    url = f"http://127.0.0.1:{free_port(21000)}/apis/ccompat/v7"

    def fetch() -> None:
        with SchemaRegistryClient(RegistrySettings(url=url), timeout=2) as registry:
            registry.schema_by_id(1)

    result = CliRunner().invoke(_command(fetch), [])
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith("error: ") and url.split("/apis")[0] in line, line
    assert "Traceback" not in result.output


def test_a_bad_setting_is_one_line_and_exit_2() -> None:
    def bad() -> None:
        raise ValueError("no domain topic to sink: set REKEY_SINK_TOPIC")

    result = CliRunner().invoke(_command(bad), [])
    assert result.exit_code == 2
    assert result.output.splitlines() == ["error: no domain topic to sink: set REKEY_SINK_TOPIC"]


def test_an_invalid_environment_variable_is_named_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REKEY_KAFKA_SASL_MECHANISM", "NOPE")
    result = CliRunner().invoke(_command(KafkaSettings), [])
    assert result.exit_code == 2
    [line] = result.output.splitlines()
    assert line.startswith("error: invalid setting REKEY_KAFKA_SASL_MECHANISM ('NOPE'): Input should be"), line

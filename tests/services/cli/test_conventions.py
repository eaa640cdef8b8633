"""Conventions every command keeps: one duration syntax for `--window`, arguments checked before anything
starts (a Spark JVM, a connection), `--bootstrap-server`/`-b` wherever Kafka is reached, `--output json`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app


@pytest.mark.parametrize("command", [
    ["verify", "--source", "s", "--target", "t"],
    ["reconcile", "--topic", "t", "--database-url", "sqlite:///:memory:"],
])
def test_a_bad_window_is_refused_before_anything_starts(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--window", "1w"])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        "error: --window expects a duration such as 30s, 15m, 1h, 1d (or seconds); got '1w'"]


@pytest.mark.parametrize("command", ["topics apply", "check", "status", "reconcile", "verify", "backfill", "plan",
                                     "run", "generate", "deadletters list", "deadletters show",
                                     "deadletters redrive", "replay"])
def test_every_command_that_reaches_kafka_takes_bootstrap_server(command: str) -> None:
    help_text = CliRunner().invoke(app, [*command.split(), "--help"]).output
    assert "-b, --bootstrap-server" in help_text, help_text


@pytest.mark.parametrize("command", ["topics apply", "check", "status", "plan", "generate", "reconcile", "backfill",
                                     "verify", "deadletters list", "deadletters redrive", "replay"])
def test_table_commands_offer_json(command: str) -> None:
    help_text = " ".join(CliRunner().invoke(app, [*command.split(), "--help"]).output.split())
    assert "--output" in help_text and "json" in help_text, help_text

"""librdkafka's log lines: silent unless a process asks, and rendered like the service's own in a service."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from kafka_rekey.services.observability.librdkafka import LIBRDKAFKA_LOGGER
from kafka_rekey.services.observability.logs import configure_logging


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level, propagate = root.handlers[:], root.level, LIBRDKAFKA_LOGGER.propagate
    yield
    root.handlers, LIBRDKAFKA_LOGGER.propagate = handlers, propagate
    root.setLevel(level)
    structlog.reset_defaults()


def _librdkafka_line(level: int, message: str) -> None:
    # confluent-kafka's logger call: facility, client name, message
    LIBRDKAFKA_LOGGER.log(level, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", message)


def test_a_service_logs_librdkafka_as_json_at_its_level(restored_logging: None,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("acl", "WARNING", "json")
    _librdkafka_line(logging.ERROR, "127.0.0.1:9092/bootstrap: Connect failed: Connection refused")
    _librdkafka_line(logging.INFO, "below the service's level")
    [line] = capsys.readouterr().err.splitlines()
    logged = json.loads(line)
    assert logged["level"] == "error" and logged["service"] == "acl" and logged["logger"] == "rekey.librdkafka"
    assert logged["event"] == "FAIL [rdkafka#consumer-1] 127.0.0.1:9092/bootstrap: Connect failed: Connection refused"


def test_librdkafka_is_silent_until_configured(capsys: pytest.CaptureFixture[str]) -> None:
    _librdkafka_line(logging.ERROR, "nobody asked")
    captured = capsys.readouterr()
    assert "nobody asked" not in captured.err + captured.out


def test_only_the_command_line_tools_route_client_logs() -> None:
    from kafka_rekey.services.observability.librdkafka import route_client_logs
    from kafka_rekey.services.settings import KafkaSettings

    route_client_logs(False)  # as `rekey run` sets it (a CLI command run in-process earlier may have turned it on)
    assert "logger" not in KafkaSettings().librdkafka()  # a service: librdkafka prints its own lines
    route_client_logs(True)
    try:
        assert KafkaSettings().librdkafka()["logger"] is LIBRDKAFKA_LOGGER
    finally:
        route_client_logs(False)


def test_a_command_run_in_process_leaves_the_routing_as_it_found_it() -> None:
    from typer.testing import CliRunner

    from kafka_rekey.services.cli.main import app
    from kafka_rekey.services.settings import KafkaSettings

    handlers, level = LIBRDKAFKA_LOGGER.handlers[:], LIBRDKAFKA_LOGGER.level
    result = CliRunner().invoke(app, ["-vv", "partition", "org-1", "--partitions", "12"])
    assert result.exit_code == 0, result.output
    assert "logger" not in KafkaSettings().librdkafka()
    assert (LIBRDKAFKA_LOGGER.handlers, LIBRDKAFKA_LOGGER.level) == (handlers, level)

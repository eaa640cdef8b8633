"""`rekey deadletters`: arguments refused in one line before Kafka is reached."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app


@pytest.mark.parametrize(("args", "message"), [
    (["redrive", "--reason", "bad_timestamp", "--since", "yesterday"],
     "error: --since expects ISO-8601 with an offset (2026-11-27T02:00:00Z), a date (2026-11-27) or epoch "
     "milliseconds; got 'yesterday'"),
    (["list", "--since", "2026-11-27", "--until", "2026-11-26"],
     "error: --since 2026-11-27 is not before --until 2026-11-26"),
    (["show", "--until", "2026-11-27T02:00"],
     "error: --until expects ISO-8601 with an offset (2026-11-27T02:00:00Z), a date (2026-11-27) or epoch "
     "milliseconds; got '2026-11-27T02:00'"),
])
def test_bad_selections_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["deadletters", *args, "-b", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [message]


def test_redrive_needs_a_reason() -> None:
    result = CliRunner().invoke(app, ["deadletters", "redrive"])
    assert result.exit_code == 2
    assert "--reason" in result.output

"""`rekey replay`: arguments refused in one line before Kafka is reached."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app


@pytest.mark.parametrize(("args", "message"), [
    (["--org", "org-1"], "error: give exactly one of --to-topic T or --to-file F.jsonl"),
    (["--org", "org-1", "--to-topic", "t", "--to-file", "f.jsonl"],
     "error: give exactly one of --to-topic T or --to-file F.jsonl"),
    (["--org", "org-1", "--to-file", "/nowhere/f.jsonl"],
     "error: --to-file /nowhere/f.jsonl: directory /nowhere not found"),
    (["--org", "org-1", "--to-topic", "t", "--from", "noon"],
     "error: --from expects ISO-8601 with an offset (2026-11-27T02:00:00Z), a date (2026-11-27) or epoch "
     "milliseconds; got 'noon'"),
    (["--org", "org-1", "--to-topic", "t", "--from", "2026-11-27", "--to", "2026-11-27"],
     "error: --from 2026-11-27 is not before --to 2026-11-27"),
    (["--org", "org-1", "--to-topic", "t", "--family", "nope"],
     "error: --family 'nope' is not a family of the catalog (interaction_events, org_timeline)"),
])
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["replay", *args, "-b", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [message]

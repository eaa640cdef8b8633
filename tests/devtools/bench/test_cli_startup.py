"""`rekey bench cli` times real processes and records its own section."""

from pathlib import Path

from typer.testing import CliRunner

from kafka_rekey.services.cli.main import with_plugins
from kafka_rekey_dev.bench.cli_startup import SECTION, run_bench

app = with_plugins()


def test_each_command_is_timed_in_fresh_processes_and_recorded(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\n## ACL (rekey bench acl)\n\nacl figures\n")
    measured = run_bench(runs=2, record=True, doc=doc)

    by_name = {timing.name: timing for timing in measured}
    interpreter = by_name["python -c pass (interpreter start)"]
    partition = by_name["rekey partition org-1:i-9 --partitions 12"]
    assert all(len(timing.seconds) == 2 for timing in measured)
    assert partition.median > interpreter.median > 0  # a command cannot start faster than Python itself
    text = doc.read_text()
    assert "acl figures" in text and text.count(SECTION) == 1
    assert "| `rekey --help` |" in text and "rekey bench cli --runs 2" in text


def test_the_command_is_offered_under_bench() -> None:
    result = CliRunner().invoke(app, ["bench", "cli", "--help"])
    assert result.exit_code == 0 and "--runs" in result.output

"""The `rekey` entry point: help texts that keep their defaults, and `--version`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app
from kafka_rekey_dev.embedded.processes import free_port


def flat(output: str) -> str:
    return " ".join(output.split())


def test_help_keeps_its_brackets_and_the_version_prints() -> None:
    runner = CliRunner()
    help_text = flat(runner.invoke(app, ["topics", "apply", "--help"]).output)
    assert "[default: REKEY_CATALOG_PATH, else catalog/topics.yaml]" in help_text
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.startswith("rekey ")


def test_run_against_an_unreachable_broker_is_one_line_and_exit_1(tmp_path: Path) -> None:
    port = free_port(21000)
    env = {**os.environ, "REKEY_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}", "REKEY_DATA_DIR": str(tmp_path)}
    result = subprocess.run([str(Path(sys.executable).parent / "rekey"), "run", "acl"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: Kafka at 127.0.0.1:{port} is unreachable: "), line
    assert "Connection refused" in line


def test_a_ca_file_that_is_no_certificate_is_one_line_naming_the_property_and_exit_2(tmp_path: Path) -> None:
    not_a_certificate = tmp_path / "ca.pem"
    not_a_certificate.write_text("this is not a PEM certificate\n")
    env = {**os.environ, "REKEY_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port(21000)}",
           "REKEY_KAFKA_SECURITY_PROTOCOL": "SSL", "REKEY_KAFKA_SSL_CA_LOCATION": str(not_a_certificate),
           "REKEY_DATA_DIR": str(tmp_path)}
    result = subprocess.run([str(Path(sys.executable).parent / "rekey"), "run", "acl"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: Kafka client settings refused: ") and "ssl.ca.location" in line, line


def test_run_sink_without_its_topic_names_the_variable(kafka_bootstrap: str, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("REKEY_SINK_")}
    env |= {"REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REKEY_DATA_DIR": str(tmp_path)}
    result = subprocess.run([str(Path(sys.executable).parent / "rekey"), "run", "sink"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "error: no domain topic to sink: set REKEY_SINK_TOPIC (e.g. interaction_events_low_v2)"]


def test_librdkafka_is_silent_unless_asked_for() -> None:
    port = free_port(21000)
    rekey = str(Path(sys.executable).parent / "rekey")
    apply = ["topics", "apply", "-b", f"127.0.0.1:{port}", "--wait-for-brokers", "2"]
    quiet = subprocess.run([rekey, *apply], capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 1, quiet.stderr
    assert f"no Kafka broker answered at 127.0.0.1:{port}" in quiet.stdout + quiet.stderr
    assert "|FAIL|" not in quiet.stderr and "Connection refused" not in quiet.stderr, quiet.stderr
    verbose = subprocess.run([rekey, "-v", *apply], capture_output=True, text=True, timeout=120)
    assert verbose.returncode == 1, verbose.stderr
    logged = [line for line in verbose.stderr.splitlines() if line.startswith("ERROR librdkafka FAIL ")]
    assert logged and "Connection refused" in logged[0], verbose.stderr


def test_outside_a_checkout_the_catalog_is_asked_for(tmp_path: Path) -> None:
    rekey = str(Path(sys.executable).parent / "rekey")
    env = {name: value for name, value in os.environ.items() if not name.startswith("REKEY_")}
    explain = [rekey, "explain", "--org", "org-a", "--interaction", "i-1"]
    missing = subprocess.run(explain, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        "error: topic catalog catalog/topics.yaml not found (set --catalog or REKEY_CATALOG_PATH)"]
    catalog = Path(__file__).resolve().parents[3] / "catalog" / "topics.yaml"
    found = subprocess.run(explain, cwd=tmp_path, env={**env, "REKEY_CATALOG_PATH": str(catalog)},
                           capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert '"org_id": "org-a"' in found.stdout


def test_a_command_line_naming_its_command_runs_it_whatever_root_options_come_first(tmp_path: Path) -> None:
    """`main` builds only the command it is given; root options before it, the whole list and an unknown command
    behave as with every command built."""
    rekey = str(Path(sys.executable).parent / "rekey")
    settings = tmp_path / "settings.yaml"
    settings.write_text("{}\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([rekey, *args], capture_output=True, text=True, timeout=60)

    expected = '{"key": "org-1:i-9", "murmur2": 966844694, "partition": 2}\n'
    for prefix in ([], ["-v"], ["--config", str(settings)], [f"--config={settings}", "-vv"]):
        result = run(*prefix, "partition", "org-1:i-9", "--partitions", "12")
        assert (result.returncode, result.stdout) == (0, expected), (prefix, result.stderr)
    listing = flat(run("--help").stdout)
    assert all(name in listing for name in ("partition", "topics", "bench", "run", "status"))
    assert "Usage: rekey topics apply" in flat(run("topics", "apply", "--help").stdout)
    assert run("--version").stdout.startswith("rekey ")
    unknown = run("nosuch")
    assert unknown.returncode == 2 and "No such command 'nosuch'" in unknown.stderr

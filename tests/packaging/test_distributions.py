"""The two distributions as a user gets them: `kafka-rekey` (the product) and `kafka-rekey-dev` (the development
tooling), built from the checkout, installed into fresh virtualenvs and run from a directory outside it."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from kafka_rekey.services.cli.main import DEV_COMMANDS
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.spark_backfill.pyfiles import build_archive

CHECKOUT = Path(__file__).resolve().parents[2]
PIP = [sys.executable, "-m", "pip"]
ROOT = "kafka_rekey"
# What only development needs: the embedded stack, chaos, bench, the demo, dashboard rendering, the Kafka Streams
# baseline's sources.
DEV_MARKERS = ("devtools", "kafka_rekey_dev", "embedded", "chaos", "bench", "demo", "dashboard", ".java")


def _build(source: Path, out: Path) -> Path:
    subprocess.run([*PIP, "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
                   check=True, timeout=300, capture_output=True)
    [wheel] = out.glob("*.whl")
    return wheel


def _dependencies(root: Path) -> Path:
    """The test interpreter's third-party packages without rekey's own distributions, as links in one folder."""
    folder = root / "dependencies"
    folder.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("kafka_rekey", "__editable__")) and entry.suffix != ".pth":
            (folder / entry.name).symlink_to(entry)
    return folder


def _venv(root: Path, *wheels: Path) -> Path:
    """A virtualenv holding only `wheels`; the third-party dependencies are the test interpreter's own (a path
    line, so none of its `.pth` files, the checkout's editable installs among them, takes effect)."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([*PIP, "--python", str(python), "install", "--no-deps", "--no-compile", "-q", *map(str, wheels)],
                   check=True, timeout=300)
    site_packages = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip()
    (Path(site_packages) / "checkout-dependencies.pth").write_text(f"{_dependencies(root)}\n")
    return venv


def _rekey(venv: Path, *argv: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "rekey"), *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, input=stdin, env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)})


@pytest.fixture(scope="module")
def product_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(CHECKOUT, tmp_path_factory.mktemp("product"))


@pytest.fixture(scope="module")
def dev_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(CHECKOUT / "devtools", tmp_path_factory.mktemp("dev"))


@pytest.fixture(scope="module")
def production(product_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("production"), product_wheel)


def _without_metadata(names: list[str]) -> list[str]:
    return [name for name in names if ".dist-info/" not in name]


def test_the_product_wheel_has_one_import_root_and_no_development_tooling(product_wheel: Path) -> None:
    names = _without_metadata(zipfile.ZipFile(product_wheel).namelist())

    assert {name.split("/")[0] for name in names} == {ROOT}
    assert {name.split("/")[1] for name in names} == {"services", "shared", "spark_backfill"}
    assert not [name for name in names if any(marker in name for marker in DEV_MARKERS)]
    assert "kafka_rekey/shared/schemas/interaction_event.avsc" in names


def test_the_pyfiles_archive_has_one_import_root_and_no_development_tooling(tmp_path: Path) -> None:
    names = zipfile.ZipFile(build_archive(tmp_path)).namelist()

    assert {name.split("/")[0] for name in names} == {ROOT}
    assert not [name for name in names if any(marker in name for marker in DEV_MARKERS)]


def test_the_dev_wheel_carries_the_tooling_and_the_demo_catalog(dev_wheel: Path) -> None:
    archive = zipfile.ZipFile(dev_wheel)
    names = _without_metadata(archive.namelist())

    assert {name.split("/")[0] for name in names} == {"kafka_rekey_dev"}
    assert archive.read("kafka_rekey_dev/demo/topics.yaml") == (CHECKOUT / "catalog" / "topics.yaml").read_bytes()
    entry_points = next(name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt"))
    assert "[kafka_rekey.commands]" in archive.read(entry_points).decode()


def test_operator_commands_run_from_the_production_install(production: Path, tmp_path: Path) -> None:
    version = _rekey(production, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == "rekey 0.1.0", version

    catalog = str(CHECKOUT / "catalog" / "topics.yaml")
    partition = _rekey(production, "partition", "org-7:int-42", "--partitions", "12", cwd=tmp_path)
    assert partition.returncode == 0, partition.stderr
    assert json.loads(partition.stdout)["partition"] == partition_for("org-7:int-42", 12)

    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"orgId": "org-1", "interactionId": "call-1", "eventId": "e-1",
                                   "eventType": "start", "interactionType": "call",
                                   "timestamp": "2023-10-27T14:30:00.250Z", "data": {}}) + "\n")
    translated = _rekey(production, "translate", "--catalog", catalog, "--source-format", "ccaas-json", "--file",
                        str(records), cwd=tmp_path)
    assert translated.returncode == 0, translated.stderr
    event = json.loads(translated.stdout.splitlines()[0])
    assert event["outcome"] == "event" and event["outputs"][0]["partition"] == partition_for("org-1:call-1", 8)

    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "topics.yaml").write_bytes((CHECKOUT / "catalog" / "topics.yaml").read_bytes())
    docs = _rekey(production, "topics", "docs", "--catalog", "catalog/topics.yaml", cwd=tmp_path)
    assert docs.returncode == 0, docs.stderr
    assert (tmp_path / "docs" / "TOPICS.md").read_text() == (CHECKOUT / "docs" / "TOPICS.md").read_text()


@pytest.mark.parametrize("command", sorted(DEV_COMMANDS))
def test_a_development_command_on_a_production_install_names_the_distribution(
        production: Path, tmp_path: Path, command: str) -> None:
    ran = _rekey(production, command, "start", "--help", cwd=tmp_path)

    assert ran.returncode == 1
    assert ran.stderr.splitlines() == [f"error: `rekey {command}` is a development command: install kafka-rekey-dev "
                                       "(pip install kafka-rekey-dev)"]
    assert ran.stdout == ""


def test_help_groups_operator_and_development_commands(production: Path, tmp_path: Path) -> None:
    shown = _rekey(production, "--help", cwd=tmp_path)

    assert shown.returncode == 0, shown.stderr
    sections = [line.rstrip(":") for line in shown.stdout.splitlines() if line.endswith(":") and not line[0].isspace()]
    assert sections[-1] == "Development (kafka-rekey-dev)" and "Services" in sections and "Migration" in sections
    listed = shown.stdout.split("\nTopics and catalog:")[1].splitlines()
    assert not [line for line in listed if line.endswith("...")]  # click's mark of a summary cut short


def test_the_installed_dev_distribution_adds_its_commands_and_finds_its_catalog(
        product_wheel: Path, dev_wheel: Path, tmp_path: Path) -> None:
    venv = _venv(tmp_path, product_wheel, dev_wheel)
    found = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import kafka_rekey_dev; from kafka_rekey_dev.demo.run import CATALOG; "
                            "print(kafka_rekey_dev.__file__); print(CATALOG)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    package, catalog = map(Path, found.stdout.split())
    assert package.is_relative_to(venv) and catalog.is_relative_to(venv), found.stdout

    shown = _rekey(venv, "broker", "--help", cwd=tmp_path)
    assert shown.returncode == 0 and "start" in shown.stdout, shown.stderr

"""The Dockerfile builds what the chart assumes: user, entrypoints, paths. (No Docker engine here, so the
build itself is not run; its embedded scripts are checked with bash and Python.)"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .rendering import REPO_ROOT, default_values

DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()


def _stages() -> dict[str, str]:
    parts = re.split(r"^FROM\s+\S+\s+AS\s+(\S+)\s*$", DOCKERFILE, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _heredocs() -> dict[str, str]:
    """Files the Dockerfile writes with `COPY <<'EOF' <path>`."""
    pattern = re.compile(r"^COPY [^\n]*<<'EOF' (\S+)\n(.*?)^EOF$", flags=re.M | re.S)
    return {path: body for path, body in pattern.findall(DOCKERFILE)}


def test_service_image_is_the_default_target_with_rekey_entrypoint() -> None:
    stages = _stages()

    assert list(stages)[-1] == "service"
    assert 'ENTRYPOINT ["rekey"]' in stages["service"]
    assert "EXPOSE 6066" in stages["service"]
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in DOCKERFILE
    assert 'pip install ".[spark]"' in stages["build-spark"]


def test_the_service_image_carries_no_spark_and_no_development_tooling() -> None:
    stages = _stages()

    build = [line for line in stages["build"].splitlines() if not line.startswith("#")]
    assert [line for line in build if "pip install" in line] == ["RUN pip install ."]
    assert not [line for line in build if "pyspark" in line.lower() or "[spark]" in line]
    assert re.findall(r"^COPY --from=(\S+) /opt/rekey/venv ", stages["service"], flags=re.M) == ["build"]
    assert re.findall(r"^COPY --from=(\S+) /opt/rekey/venv ", stages["backfill"], flags=re.M) == ["build-spark"]
    assert "/opt/rekey/venv" not in stages["runtime"].replace("PATH=/opt/rekey/venv/bin", "")
    copied = re.findall(r"^COPY (\S+) ", DOCKERFILE, flags=re.M)
    assert not [source for source in copied if source.startswith("devtools")], copied
    context = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    assert "**" in context and not [line for line in context if line.startswith("!devtools")]


def test_images_run_as_the_uid_the_chart_expects() -> None:
    stages = _stages()
    uid = default_values()["podSecurityContext"]["runAsUser"]
    gid = default_values()["podSecurityContext"]["runAsGroup"]

    assert f"--uid {uid}" in stages["runtime"]
    assert f"--gid {gid}" in stages["runtime"]
    for stage in ("service", "backfill"):
        assert f"USER {uid}:{gid}" in stages[stage]


def test_backfill_image_ships_the_spark_application_file_the_chart_points_at() -> None:
    main_file = default_values()["backfill"]["sparkOperator"]["mainApplicationFile"]
    path = main_file.removeprefix("local://")

    source = _heredocs()[path]

    tree = ast.parse(source)
    assert any(isinstance(node, ast.ImportFrom) and node.module == "kafka_rekey.services.cli.main"
               for node in tree.body)
    assert "openjdk-17-jre-headless" in _stages()["backfill"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_backfill_entrypoint_is_valid_bash_handling_spark_roles() -> None:
    entrypoint = _heredocs()["/opt/rekey/entrypoint.sh"]

    checked = subprocess.run(["bash", "-n"], input=entrypoint, text=True, capture_output=True, check=False)

    assert checked.returncode == 0, checked.stderr
    assert 'ENTRYPOINT ["/opt/rekey/entrypoint.sh"]' in _stages()["backfill"]
    for role in ("driver)", "executor)", "KubernetesExecutorBackend", "exec tini -s -- rekey"):
        assert role in entrypoint


def _run_entrypoint(tmp_path: Path, *args: str, env: dict[str, str]) -> list[str]:
    """Run the entrypoint with a stand-in tini that prints the command it would exec."""
    script = tmp_path / "entrypoint.sh"
    script.write_text(_heredocs()["/opt/rekey/entrypoint.sh"])
    tini = tmp_path / "tini"
    tini.write_text('#!/usr/bin/env bash\nshift 2\nprintf "%s\\n" "$@"\n')
    tini.chmod(0o755)
    result = subprocess.run(
        ["bash", str(script), *args],
        env={"PATH": f"{tmp_path}:/usr/bin:/bin", **env},
        text=True,
        capture_output=True,
        check=True,
    )
    return result.stdout.splitlines()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_entrypoint_dispatches_rekey_and_spark_roles(tmp_path: Path) -> None:
    spark_env = {
        "JAVA_HOME": "/opt/java",
        "SPARK_HOME": "/spark",
        "SPARK_EXECUTOR_MEMORY": "2g",
        "SPARK_DRIVER_URL": "spark://driver:7078",
        "SPARK_EXECUTOR_ID": "3",
        "SPARK_EXECUTOR_CORES": "2",
        "SPARK_APPLICATION_ID": "spark-app",
        "SPARK_EXECUTOR_POD_IP": "10.0.0.9",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_EXECUTOR_POD_NAME": "exec-3",
        "SPARK_JAVA_OPT_1": "-Dsecond",
        "SPARK_JAVA_OPT_0": "-Dfirst",
        "SPARK_DRIVER_BIND_ADDRESS": "10.0.0.1",
    }

    assert _run_entrypoint(tmp_path, "run", "acl", env={}) == ["rekey", "run", "acl"]
    executor = _run_entrypoint(tmp_path, "executor", env=spark_env)
    assert executor[:5] == ["/opt/java/bin/java", "-Dfirst", "-Dsecond", "-Xms2g", "-Xmx2g"]
    assert executor[5:8] == [
        "-cp",
        "/spark/conf:/spark/jars/*",
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
    ]
    assert executor[executor.index("--executor-id") + 1] == "3"
    assert executor[executor.index("--hostname") + 1] == "10.0.0.9"
    driver = _run_entrypoint(tmp_path, "driver", "--properties-file", "/p", "local:///app.py", env=spark_env)
    assert driver == [
        "spark-submit", "--conf", "spark.driver.bindAddress=10.0.0.1", "--deploy-mode", "client",
        "--properties-file", "/p", "local:///app.py",
    ]  # fmt: skip


def test_dockerignore_lets_the_packages_in() -> None:
    ignore = (REPO_ROOT / ".dockerignore").read_text().splitlines()

    for needed in (
        "!pyproject.toml",
        "!README.md",
        "!services/",
        "!shared/",
        "!spark_backfill/",
        "!catalog/topics.yaml",
    ):
        assert needed in ignore

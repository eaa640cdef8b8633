"""Chart-level checks: lint, metadata, documentation of every value, the ci scenarios."""

from __future__ import annotations

import re
from typing import Any

import helm_python as helm
import pytest
import yaml

from .rendering import CHART_DIR, CI_SCENARIOS, NAMESPACE, ci_values, render

WARNING = 2  # helm lint severities: 1 info, 2 warning, 3 error


@pytest.mark.parametrize("scenario", [None, *CI_SCENARIOS])
def test_lint_reports_no_error_and_no_warning(scenario: str | None) -> None:
    values = ci_values(scenario) if scenario else None

    report = helm.lint(CHART_DIR, values, strict=True, namespace=NAMESPACE, kube_version="v1.33.0")

    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= WARNING] == []


def test_lint_reports_schema_violations_as_errors() -> None:
    report = helm.lint(CHART_DIR, {"services": {"acl": {"replicas": -1}}}, namespace=NAMESPACE)

    assert any("/services/acl/replicas" in error for error in report["errors"])


def test_chart_metadata() -> None:
    metadata = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())

    assert metadata["apiVersion"] == "v2"
    assert metadata["name"] == "rekey"
    assert metadata["type"] == "application"
    assert re.fullmatch(r"\d+\.\d+\.\d+", metadata["version"])
    assert metadata["appVersion"]


def test_ci_scenarios_cover_the_documented_set() -> None:
    assert {
        "minimal-values",
        "production-tls-values",
        "keda-values",
        "backfill-values",
        "backfill-spark-operator-values",
        "acl-stages-values",
        "statefulset-values",
    } <= set(CI_SCENARIOS)


def _key_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, key, previous non-blank line) for every mapping key outside block scalars."""
    found: list[tuple[int, str, str]] = []
    lines = text.splitlines()
    block_indent: int | None = None
    previous = ""
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if not stripped or indent > block_indent:
                continue
            block_indent = None
        if not stripped:
            continue
        match = re.match(r"^(\s*)([A-Za-z0-9_.-]+):(\s|$)", line)
        if match:
            found.append((number, match.group(2), previous))
            if re.search(r":\s*[|>][-+]?\s*$", line):
                block_indent = indent
        previous = stripped
    return found


def _leaf_paths(tree: dict[str, Any], prefix: str = "") -> set[str]:
    paths: set[str] = set()
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            paths |= _leaf_paths(value, f"{path}.")
        else:
            paths.add(path)
    return paths


def test_every_values_key_has_a_comment_above_it() -> None:
    text = (CHART_DIR / "values.yaml").read_text()

    undocumented = [f"line {n}: {key}" for n, key, previous in _key_lines(text) if not previous.startswith("#")]

    assert _key_lines(text), "no keys found: the parser is broken"
    assert undocumented == []


def test_every_leaf_value_has_exactly_one_param_annotation() -> None:
    text = (CHART_DIR / "values.yaml").read_text()
    params = re.findall(r"^\s*## @param (\S+) \S", text, flags=re.M)

    assert len(params) == len(set(params)), "a @param is documented twice"
    assert set(params) == _leaf_paths(yaml.safe_load(text))


def test_notes_name_the_secrets_to_create() -> None:
    notes = render(ci_values("production-tls-values")).notes

    for secret in ("rekey-kafka-credentials", "rekey-kafka-ca", "rekey-registry-credentials", "rekey-sink-prod"):
        assert secret in notes
    assert "acl: Deployment demo-rekey-acl, HPA 3..24 replicas on CPU" in notes


def test_notes_warn_about_idle_replicas() -> None:
    notes = render({"services": {"sink": {"replicas": 5, "inputTopicPartitions": 3}}}).notes

    assert "WARNING: 5 replicas for 3 partitions: 2 replica(s) will sit idle." in notes

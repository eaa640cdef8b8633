"""`rekey topics docs` writes the Markdown rendering of the catalog."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_rekey.services.cli.main import app
from kafka_rekey.shared.catalog import parse_catalog, render_markdown
from kafka_rekey_dev.embedded.maven import REPO_ROOT


def test_docs_writes_the_rendered_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    out = tmp_path / "nested" / "TOPICS.md"
    result = CliRunner().invoke(app, ["topics", "docs", "--catalog", "catalog/topics.yaml", "--out", str(out)])
    assert result.exit_code == 0, result.output
    catalog = parse_catalog((REPO_ROOT / "catalog/topics.yaml").read_text(), "catalog/topics.yaml")
    assert out.read_text() == render_markdown(catalog, "catalog/topics.yaml")
    assert "wrote" in result.output

"""The Markdown topic docs: every topic carries its documentation, and docs/TOPICS.md is up to date."""

from __future__ import annotations

from kafka_rekey.shared.catalog import parse_catalog, render_markdown
from kafka_rekey.shared.catalog.docs import retention_text
from kafka_rekey_dev.embedded.maven import REPO_ROOT

CATALOG = parse_catalog((REPO_ROOT / "catalog/topics.yaml").read_text(), "catalog/topics.yaml")


def test_committed_docs_match_the_catalog() -> None:
    committed = (REPO_ROOT / "docs" / "TOPICS.md").read_text()
    assert committed == render_markdown(CATALOG, "catalog/topics.yaml"), "run `rekey topics docs` and commit it"


def test_every_topic_section_documents_what_consumers_need() -> None:
    markdown = render_markdown(CATALOG, "catalog/topics.yaml")
    sections = markdown.split("\n### ")[1:]
    topic_sections = {s.splitlines()[0]: s for s in sections if not s.startswith("Family")}
    assert set(topic_sections) == {t.name for t in (*CATALOG.sources, *CATALOG.topics)}
    for name, section in topic_sections.items():
        for row in ("| Key |", "| Expected key cardinality |", "| Ordering guarantee |", "| Idempotency |",
                    "| Replay |", "| Schema |", "| Retention / cleanup |", "| Kafka configs |"):
            assert row in section, f"{name} lacks {row}"
    assert "`org-initech` -> `interaction_events_initech_v1`" in markdown
    assert "&lt;org_id>" in markdown  # not swallowed as an HTML tag


def test_retention_text() -> None:
    assert retention_text(-1) == "forever"
    assert retention_text(86_400_000) == "1 day"
    assert retention_text(604_800_000) == "7 days"
    assert retention_text(7_200_000) == "2 h"
    assert retention_text(1500) == "1500 ms"

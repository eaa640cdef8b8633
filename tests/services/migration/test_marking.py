"""`retired: true` goes into the named topic's entry of the catalog text, leaving the rest (comments too) as it is."""

from __future__ import annotations

from kafka_rekey.services.migration.retire import marked_text

TEXT = """topics:
  # the old version
  - name: events_v1
    role: family
  - name: "events_v2"  # current
    role: family
"""


def test_the_entry_gets_the_field_and_nothing_else_changes() -> None:
    marked = marked_text(TEXT, "events_v1")
    assert marked == TEXT.replace("  - name: events_v1\n", "  - name: events_v1\n    retired: true\n")
    assert marked_text(marked, "events_v1") == marked
    assert "  - name: \"events_v2\"  # current\n    retired: true\n" in (marked_text(TEXT, "events_v2") or "")
    assert marked_text(TEXT, "events") is None

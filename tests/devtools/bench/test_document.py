"""A benchmark rewrites only its own section of docs/BENCHMARKS.md."""

from pathlib import Path

from kafka_rekey_dev.bench.document import replace_section


def test_a_section_is_replaced_in_place_and_the_others_are_kept(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\n## ACL\n\nacl figures\n\n## CLI\n\nfirst\n\n## Backfill\n\nbackfill figures\n")
    replace_section(doc, "## CLI", "## CLI\n\nsecond\n")
    assert doc.read_text() == ("# Benchmarks\n\n## ACL\n\nacl figures\n\n## CLI\n\nsecond\n\n"
                               "## Backfill\n\nbackfill figures\n")


def test_a_missing_section_is_appended(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    replace_section(doc, "## CLI", "## CLI\n\nfigures\n")
    replace_section(doc, "## ACL", "## ACL\n\nmore\n")
    assert doc.read_text() == "# Benchmarks\n\n## CLI\n\nfigures\n\n## ACL\n\nmore\n"

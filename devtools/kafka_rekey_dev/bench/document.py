"""docs/BENCHMARKS.md is written by the benchmarks themselves (`--record`): each owns one `## ` section."""

from __future__ import annotations

import re
from pathlib import Path


def replace_section(path: Path, heading: str, section: str) -> None:
    """Replace the section that starts with `heading` (up to the next `## `) by `section`, or append it; the
    other sections stay as they are."""
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section.rstrip("\n") + "\n\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")

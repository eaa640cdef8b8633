"""Key samples for the skew simulator: (org_id, interaction_id, weight) rows from CSV, JSONL or topic keys."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka_rekey.shared.keys import KEY_SEPARATOR


@dataclass(frozen=True, slots=True)
class SampleRow:
    """One interaction of the sample; `weight` is its relative share of events (1 = one event)."""

    org_id: str
    interaction_id: str
    weight: float = 1.0


def _row(fields: dict[str, Any], where: str) -> SampleRow:
    org_id, interaction_id, weight = fields.get("org_id"), fields.get("interaction_id"), fields.get("weight")
    for name, value in (("org_id", org_id), ("interaction_id", interaction_id)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{where}: {name}: required, a non-empty string")
    if weight in (None, ""):
        return SampleRow(str(org_id), str(interaction_id))
    try:
        number = float(weight)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: weight: must be a number, got {weight!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{where}: weight: must be > 0, got {weight!r}")
    return SampleRow(str(org_id), str(interaction_id), number)


def parse_sample(text: str, source: str) -> list[SampleRow]:
    """Rows of a `.csv` (header `org_id,interaction_id[,weight]`) or `.jsonl` sample named `source`."""
    if source.endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text))
        missing = {"org_id", "interaction_id"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{source}: line 1: header lacks {', '.join(sorted(missing))}")
        rows = [_row(fields, f"{source}: line {reader.line_num}") for fields in reader]
    elif source.endswith((".jsonl", ".ndjson")):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                fields = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{source}: line {number}: not JSON: {error.msg}") from None
            if not isinstance(fields, dict):
                raise ValueError(f"{source}: line {number}: must be a JSON object")
            rows.append(_row(fields, f"{source}: line {number}"))
    else:
        raise ValueError(f"{source}: unknown sample format; use .csv or .jsonl")
    if not rows:
        raise ValueError(f"{source}: the sample has no rows")
    return rows


def rows_from_keys(keys: Iterable[bytes | None]) -> tuple[list[SampleRow], int]:
    """Sample rows from `org_id:interaction_id` record keys (one event each), and how many keys did not parse."""
    rows: list[SampleRow] = []
    skipped = 0
    for key in keys:
        org_id, separator, interaction_id = (key or b"").decode("utf-8", "replace").partition(KEY_SEPARATOR)
        if separator and org_id and interaction_id:
            rows.append(SampleRow(org_id, interaction_id))
        else:
            skipped += 1
    return rows, skipped

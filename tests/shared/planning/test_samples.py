"""Key samples from CSV, JSONL and topic keys, with errors naming the file, line and field."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.planning import SampleRow, parse_sample, rows_from_keys


def test_csv_with_and_without_weight() -> None:
    rows = parse_sample("org_id,interaction_id,weight\norg-1,i-1,2.5\norg-2,i-2,\n", "s.csv")
    assert rows == [SampleRow("org-1", "i-1", 2.5), SampleRow("org-2", "i-2", 1.0)]
    assert parse_sample("interaction_id,org_id\ni-1,org-1\n", "s.csv") == [SampleRow("org-1", "i-1")]


def test_jsonl_skips_blank_lines() -> None:
    text = '{"org_id": "org-1", "interaction_id": "i-1", "weight": 3}\n\n{"org_id": "o", "interaction_id": "i"}\n'
    assert parse_sample(text, "s.jsonl") == [SampleRow("org-1", "i-1", 3.0), SampleRow("o", "i")]


@pytest.mark.parametrize(("text", "source", "message"), [
    ("org_id,weight\norg-1,1\n", "s.csv", "s.csv: line 1: header lacks interaction_id"),
    ("org_id,interaction_id,weight\norg-1,i-1,heavy\n", "s.csv", "s.csv: line 2: weight: must be a number"),
    ("org_id,interaction_id,weight\norg-1,i-1,0\n", "s.csv", "s.csv: line 2: weight: must be > 0"),
    ('{"org_id": "o"}\n', "s.jsonl", "s.jsonl: line 1: interaction_id: required"),
    ('{"org_id": "o", "interaction_id": "i"}\nnope\n', "s.jsonl", "s.jsonl: line 2: not JSON"),
    ("[1]\n", "s.jsonl", "s.jsonl: line 1: must be a JSON object"),
    ("org_id,interaction_id\n", "s.csv", "s.csv: the sample has no rows"),
    ("x", "s.parquet", "s.parquet: unknown sample format"),
])
def test_sample_errors(text: str, source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_sample(text, source)


def test_rows_from_topic_keys() -> None:
    rows, skipped = rows_from_keys([b"org-1:i-1", b"org-1:ext:2", None, b"no-separator", b":i"])
    assert rows == [SampleRow("org-1", "i-1"), SampleRow("org-1", "ext:2")]
    assert skipped == 3

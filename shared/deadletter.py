"""Dead-letter conventions shared by the live service and the backfill: what a DLQ record carries.

A dead-lettered record keeps the original key and value bytes untouched and the original headers, plus
`dlq.*` headers naming the error and where the record came from, so it can be fixed and replayed.
"""

from __future__ import annotations

from collections.abc import Mapping


def dead_letter_headers(
    *,
    reason: str,
    error: str,
    field: str | None,
    source_topic: str,
    source_partition: int,
    source_offset: int,
    service: str,
    service_version: str,
    original_headers: Mapping[str, bytes] | None = None,
) -> list[tuple[str, bytes]]:
    headers = [(name, value) for name, value in (original_headers or {}).items() if not name.startswith("dlq.")]
    headers += [
        ("dlq.reason", reason.encode()),
        ("dlq.error", error.encode()),
        ("dlq.field", (field or "").encode()),
        ("dlq.source.topic", source_topic.encode()),
        ("dlq.source.partition", str(source_partition).encode()),
        ("dlq.source.offset", str(source_offset).encode()),
        ("dlq.service", service.encode()),
        ("dlq.service.version", service_version.encode()),
    ]
    return headers

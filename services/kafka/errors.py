"""Errors about reaching Kafka, importable without loading the client library (the CLI maps them to exit 1)."""

from __future__ import annotations


class KafkaUnreachable(RuntimeError):
    """No broker answered (the message says which address and why)."""

"""Synthetic keys shaped like a strategy's real keys, for estimates when no real keys are at hand."""

from __future__ import annotations

from kafka_rekey.shared.keys.strategies import KEY_SEPARATOR


def synthetic_keys(strategy: str, count: int, orgs: int = 200) -> list[str]:
    """`count` distinct-enough keys as `strategy` would build them (`custom`/`none`: opaque `key-<n>`)."""
    if strategy == "org":
        return [f"org-{i}" for i in range(count)]
    if strategy == "org_interaction":
        return [f"org-{i % orgs}{KEY_SEPARATOR}interaction-{i}" for i in range(count)]
    if strategy == "interaction":
        return [f"interaction-{i}" for i in range(count)]
    if strategy == "salted":
        return [f"org-{i // 16}{KEY_SEPARATOR}{i % 16}" for i in range(count)]
    return [f"key-{i}" for i in range(count)]

"""The environment of a live ACL started in a test: the session broker and registry, a catalog copy, memory state."""

from __future__ import annotations

import uuid
from pathlib import Path


def acl_env(kafka_bootstrap: str, registry_url: str, catalog_path: Path, state_dir: Path,
            app_id: str | None = None) -> dict[str, str]:
    return {
        "REKEY_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "REKEY_REGISTRY_URL": registry_url,
        "REKEY_CATALOG_PATH": str(catalog_path),
        "REKEY_STATE_STORE": "memory",
        "REKEY_DATA_DIR": str(state_dir),
        "REKEY_APP_ID": app_id or f"rekey-acl-{uuid.uuid4().hex[:8]}",
        "REKEY_INTERNAL_PARTITIONS": "4",
    }

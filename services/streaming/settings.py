"""Settings of the faust stream services (`REKEY_*`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from services.settings import ServiceSettings


class StreamSettings(ServiceSettings):
    app_id: str | None = Field(default=None, description="Consumer group / faust app id; the service's own by default.")
    state_store: Literal["memory", "rocksdb"] = "rocksdb"
    internal_partitions: int = Field(default=8, ge=1, description="Partitions of the sequencing topic.")
    internal_replication_factor: int = Field(default=1, ge=1)
    dedupe_horizon_hours: float = Field(
        default=168.0, gt=0, description="How long a dedupe id is remembered (retention of its changelog)."
    )
    dedupe_recent_per_key: int = Field(
        default=32, ge=1, description="Latest dedupe ids kept in each key's counter record (crash safety)."
    )
    top_orgs: int = Field(default=20, ge=1, description="Orgs exported individually in the per-org metric.")
    service_version: str = "0.1.0"

"""Settings of the sink service (`REKEY_SINK_*`, composed with the shared `REKEY_*` service settings)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from kafka_rekey.services.settings import MissingSetting, RekeySettings, ServiceSettings

TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")


class SinkOptions(RekeySettings):
    """What the sink reads, where it writes and how (`REKEY_SINK_*`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_SINK_", extra="ignore")

    topic: str | None = Field(default=None, description="The domain topic to apply (required to run).")
    subject: str | None = Field(
        default=None, description="Registry subject of the topic's values; the catalog's, else `<topic>-value`."
    )
    table: str = Field(default="interactions", description="The state table; history and corrections tables "
                       "are `<table>_events` and `<table>_corrections`.")
    database_url: str | None = Field(
        default=None, description="`postgresql://...` or `sqlite:///path`; SQLite under the data dir by default."
    )
    group_id: str | None = Field(default=None, description="Consumer group; `rekey-sink-<table>` by default.")
    session_timeout_ms: int = Field(default=45_000, ge=6000, le=300_000, description="Consumer group session "
                                    "timeout: how soon a crashed sink's partitions move to another member.")
    batch_size: int = Field(default=500, ge=1, le=5000, description="Records per database transaction at most.")
    batch_timeout_s: float = Field(default=0.5, gt=0, description="How long to wait to fill a batch.")
    watermark_enabled: bool = True
    watermark_delta_s: float = Field(default=3600.0, ge=0,
                                     description="Lateness accepted behind the newest event time seen.")
    reorder_enabled: bool = Field(default=False, description="Hold events until their key's previous sequence.")
    reorder_max_held: int = Field(default=10_000, ge=1)
    reorder_timeout_s: float = Field(default=30.0, gt=0)
    db_attempts: int = Field(default=3, ge=1, description="Tries of one batch's transaction before giving up.")

    @field_validator("table")
    @classmethod
    def _table_name(cls, value: str) -> str:
        if not TABLE_NAME.match(value):
            raise ValueError(f"REKEY_SINK_TABLE {value!r} must be a plain SQL identifier "
                             f"(letters, digits, underscores; at most 48 characters)")
        return value

    @property
    def consumer_group(self) -> str:
        return self.group_id or f"rekey-sink-{self.table}"


class SinkSettings(ServiceSettings):
    """Everything `run_sink` needs."""

    sink: SinkOptions = Field(default_factory=SinkOptions)

    @property
    def database_url(self) -> str:
        return self.sink.database_url or f"sqlite:///{self.data_dir / 'sink.sqlite3'}"

    def require_topic(self) -> str:
        if not self.sink.topic:
            raise MissingSetting("no domain topic to sink: set REKEY_SINK_TOPIC (e.g. interaction_events_low_v2)")
        return self.sink.topic

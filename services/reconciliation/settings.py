"""Settings of the reconciler (`REKEY_RECONCILE_*`, plus the sink's `REKEY_SINK_*` for the table it audits)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from kafka_rekey.services.settings import RekeySettings
from kafka_rekey.services.sink.settings import SinkSettings


class ReconcileOptions(RekeySettings):
    """What to audit and how (`REKEY_RECONCILE_*`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_RECONCILE_", extra="ignore")

    source_topic: str | None = Field(default=None, description="Source topic to audit against the domain topic "
                                     "(a catalog source); no source check when unset.")
    window_s: int = Field(default=3600, ge=1, description="Event-time window of the audit.")
    repair: bool = Field(default=False, description="Rewind mismatching windows from the domain topic.")
    emit: bool = Field(default=True, description="Publish ReconciliationRequired records per mismatch.")
    interval_s: float = Field(default=300.0, gt=0, description="Service mode: seconds between audits.")
    lookback_s: float | None = Field(default=None, gt=0, description="Service mode: audit event times this far "
                                     "back (whole history when unset).")
    settle_s: float = Field(default=600.0, ge=0, description="Service mode: leave windows this recent alone "
                            "(records may still be in flight).")
    read_timeout_s: float = Field(default=120.0, gt=0, description="Deadline to read a topic to its end.")


class ReconcilerSettings(SinkSettings):
    reconcile: ReconcileOptions = Field(default_factory=ReconcileOptions)

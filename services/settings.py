"""Typed settings, read once per process from `REKEY_*` environment variables (pydantic-settings).

Each service composes the groups it needs into one settings object; nothing else reads the environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.embedded.maven import REPO_ROOT

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
ProcessingGuarantee = Literal["at_least_once", "exactly_once"]


class KafkaSettings(BaseSettings):
    """How to reach the Kafka cluster (`REKEY_KAFKA_*`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_KAFKA_", extra="ignore")

    bootstrap_servers: str = "127.0.0.1:9092"
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: Path | None = None

    def librdkafka(self) -> dict[str, Any]:
        """Connection settings in confluent-kafka (librdkafka) form."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
        }
        if self.sasl_mechanism:
            config["sasl.mechanism"] = self.sasl_mechanism
            config["sasl.username"] = self.sasl_username
            config["sasl.password"] = self.sasl_password.get_secret_value() if self.sasl_password else None
        if self.ssl_ca_location:
            config["ssl.ca.location"] = str(self.ssl_ca_location)
        return config


class RegistrySettings(BaseSettings):
    """The Confluent-API-compatible schema registry (`REKEY_REGISTRY_*`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_REGISTRY_", extra="ignore")

    # The base URL of the Confluent REST API; `rekey registry start` serves it under /apis/ccompat/v7.
    url: str = "http://127.0.0.1:8081/apis/ccompat/v7"
    username: str | None = None
    password: SecretStr | None = None


class ServiceSettings(BaseSettings):
    """Settings every long-running rekey service shares (`REKEY_*`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_", extra="ignore")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    registry: RegistrySettings = Field(default_factory=RegistrySettings)
    catalog_path: Path = REPO_ROOT / "catalog" / "topics.yaml"
    processing_guarantee: ProcessingGuarantee = "at_least_once"
    data_dir: Path = REPO_ROOT / "var" / "state"
    web_port: int = Field(default=6066, ge=1, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = "json"

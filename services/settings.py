"""Typed settings, read once per process from `REKEY_*` environment variables (pydantic-settings) and, under
them, an optional YAML file named by `REKEY_CONFIG` (`rekey --config FILE`).

The file holds each group under its name: `REKEY_KAFKA_SASL_MECHANISM` is `kafka: {sasl_mechanism: ...}`,
`REKEY_SINK_TABLE` is `sink: {table: ...}`, `REKEY_CATALOG_PATH` is `catalog_path` at the top. An environment
variable wins over the file. Each service composes the groups it needs into one settings object; nothing else
reads the environment.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from kafka_rekey.services.observability.librdkafka import client_log_config

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"]
ProcessingGuarantee = Literal["at_least_once", "exactly_once"]


CONFIG_FILE_VARIABLE = "REKEY_CONFIG"


class MissingSetting(ValueError):
    """A setting the command needs has no value (the message names the variable)."""


@lru_cache(maxsize=8)
def _config_file(path: str) -> dict[str, Any]:
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise ValueError(f"{CONFIG_FILE_VARIABLE}={path}: cannot read it ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{CONFIG_FILE_VARIABLE}={path}: not valid YAML ({str(error).splitlines()[0]})") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ValueError(f"{CONFIG_FILE_VARIABLE}={path}: expected a mapping of settings, got a "
                         f"{type(document).__name__}")
    return document


def config_section(prefix: str) -> list[str]:
    """Where a group with environment prefix `prefix` sits in the file: `REKEY_KAFKA_` -> ["kafka"]."""
    return [part.lower() for part in prefix.removeprefix("REKEY_").split("_") if part]


class _ConfigFileSource(PydanticBaseSettingsSource):
    """The settings group's section of the `REKEY_CONFIG` file (mappings inside it belong to other groups)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # everything is read at once in __call__

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get(CONFIG_FILE_VARIABLE)
        if not path:
            return {}
        section: Any = _config_file(path)
        for step in config_section(str(self.config.get("env_prefix", ""))):
            section = section.get(step) if isinstance(section, dict) else None
        if not isinstance(section, dict):
            return {}
        return {name: value for name, value in section.items()
                if name in self.settings_cls.model_fields and not isinstance(value, dict)}


class RekeySettings(BaseSettings):
    """A group of settings: its environment variables, then its section of the optional config file."""

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _ConfigFileSource(settings_cls), file_secret_settings


class KafkaSettings(RekeySettings):
    """How to reach the Kafka cluster (`REKEY_KAFKA_*`): PLAINTEXT, TLS with a CA and a client certificate (mTLS),
    SASL PLAIN / SCRAM / OAUTHBEARER (OIDC client credentials) / GSSAPI, and any other librdkafka property from a
    properties file (as Kafka's tools take `--command-config`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_KAFKA_", extra="ignore")

    bootstrap_servers: str = "127.0.0.1:9092"
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: Path | None = None
    ssl_certificate_location: Path | None = Field(default=None, description="Client certificate (PEM), mTLS.")
    ssl_key_location: Path | None = Field(default=None, description="Client private key (PEM), mTLS.")
    ssl_key_password: SecretStr | None = None
    oauth_token_endpoint_url: str | None = Field(default=None, description="OIDC token endpoint (OAUTHBEARER).")
    oauth_client_id: str | None = None
    oauth_client_secret: SecretStr | None = None
    oauth_scope: str | None = None
    kerberos_service_name: str = "kafka"
    kerberos_principal: str | None = None
    kerberos_keytab: Path | None = None
    properties_file: Path | None = Field(default=None, description="More librdkafka properties, one `name=value` "
                                         "per line (`#` comments); the settings above take precedence.")

    @model_validator(mode="after")
    def _complete(self) -> KafkaSettings:
        needed: dict[str | None, tuple[str, ...]] = {
            "PLAIN": ("sasl_username", "sasl_password"),
            "SCRAM-SHA-256": ("sasl_username", "sasl_password"),
            "SCRAM-SHA-512": ("sasl_username", "sasl_password"),
            "OAUTHBEARER": ("oauth_token_endpoint_url", "oauth_client_id", "oauth_client_secret"),
        }
        missing = [name for name in needed.get(self.sasl_mechanism, ()) if getattr(self, name) is None]
        if missing:
            raise ValueError(f"SASL mechanism {self.sasl_mechanism} needs "
                             + ", ".join(f"REKEY_KAFKA_{name.upper()}" for name in missing))
        if self.sasl_mechanism and not self.security_protocol.startswith("SASL_"):
            raise ValueError(f"REKEY_KAFKA_SASL_MECHANISM={self.sasl_mechanism} needs REKEY_KAFKA_SECURITY_PROTOCOL "
                             f"SASL_SSL or SASL_PLAINTEXT, not {self.security_protocol}")
        if (self.ssl_certificate_location is None) != (self.ssl_key_location is None):
            raise ValueError("mTLS needs both REKEY_KAFKA_SSL_CERTIFICATE_LOCATION and REKEY_KAFKA_SSL_KEY_LOCATION")
        if self.properties_file is not None and not self.properties_file.is_file():
            raise ValueError(f"REKEY_KAFKA_PROPERTIES_FILE {self.properties_file} is not a file")
        return self

    def librdkafka(self) -> dict[str, Any]:
        """Connection settings in confluent-kafka (librdkafka) form (with the CLI's librdkafka logger, when routed)."""
        config: dict[str, Any] = read_properties(self.properties_file) if self.properties_file else {}
        config |= {"bootstrap.servers": self.bootstrap_servers, "security.protocol": self.security_protocol,
                   **client_log_config()}
        if self.sasl_mechanism:
            config["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            config["sasl.username"] = self.sasl_username
            config["sasl.password"] = _secret(self.sasl_password)
        elif self.sasl_mechanism == "OAUTHBEARER":
            config |= {"sasl.oauthbearer.method": "oidc",
                       "sasl.oauthbearer.token.endpoint.url": self.oauth_token_endpoint_url,
                       "sasl.oauthbearer.client.id": self.oauth_client_id,
                       "sasl.oauthbearer.client.secret": _secret(self.oauth_client_secret)}
            if self.oauth_scope:
                config["sasl.oauthbearer.scope"] = self.oauth_scope
        elif self.sasl_mechanism == "GSSAPI":
            config["sasl.kerberos.service.name"] = self.kerberos_service_name
            if self.kerberos_principal:
                config["sasl.kerberos.principal"] = self.kerberos_principal
            if self.kerberos_keytab:
                config["sasl.kerberos.keytab"] = str(self.kerberos_keytab)
        for key, path in (("ssl.ca.location", self.ssl_ca_location),
                          ("ssl.certificate.location", self.ssl_certificate_location),
                          ("ssl.key.location", self.ssl_key_location)):
            if path:
                config[key] = str(path)
        if self.ssl_key_password:
            config["ssl.key.password"] = _secret(self.ssl_key_password)
        return config


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value else None


def read_properties(path: Path) -> dict[str, str]:
    """`name=value` lines of a client properties file (blank lines and `#`/`!` comments skipped)."""
    properties: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        name, separator, value = line.partition("=")
        if not separator or not name.strip():
            raise ValueError(f"{path}:{number}: expected `name=value`, got {line!r}")
        properties[name.strip()] = value.strip()
    return properties


class RegistrySettings(RekeySettings):
    """The Confluent-API-compatible schema registry (`REKEY_REGISTRY_*`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_REGISTRY_", extra="ignore")

    # The base URL of the Confluent REST API; `rekey registry start` serves it under /apis/ccompat/v7.
    url: str = "http://127.0.0.1:8081/apis/ccompat/v7"
    username: str | None = None
    password: SecretStr | None = None
    bearer_token: SecretStr | None = Field(default=None, description="Sent as `Authorization: Bearer`; instead of "
                                           "basic auth.")
    ssl_ca_location: Path | None = Field(default=None, description="CA bundle that signed the registry's TLS "
                                         "certificate (the system's CAs otherwise).")

    @model_validator(mode="after")
    def _one_auth(self) -> RegistrySettings:
        if self.bearer_token and self.username:
            raise ValueError("set REKEY_REGISTRY_USERNAME/PASSWORD or REKEY_REGISTRY_BEARER_TOKEN, not both")
        return self


class ServiceSettings(RekeySettings):
    """Settings every long-running rekey service shares (`REKEY_*`)."""

    model_config = SettingsConfigDict(env_prefix="REKEY_", extra="ignore")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    registry: RegistrySettings = Field(default_factory=RegistrySettings)
    catalog_path: Path = Field(default=Path("catalog/topics.yaml"), description="The topic catalog; relative "
                               "paths are taken from the working directory (a checkout's root has the example).")
    processing_guarantee: ProcessingGuarantee = "at_least_once"
    data_dir: Path = Field(default=Path("var/state"), description="Local state (RocksDB stores), relative to the "
                           "working directory unless absolute; the chart mounts a volume.")
    web_port: int = Field(default=6066, ge=1, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = "json"

    @field_validator("catalog_path", "data_dir")
    @classmethod
    def _from_the_working_directory(cls, path: Path) -> Path:
        return path.expanduser().absolute()  # fixed at start, whatever changes the working directory later


def _settings_types(base: type[BaseSettings] = BaseSettings) -> dict[str, type[BaseSettings]]:
    found: dict[str, type[BaseSettings]] = {}
    for sub in base.__subclasses__():
        found[sub.__name__] = sub
        found.update(_settings_types(sub))
    return found


def describe_invalid_settings(error: ValidationError) -> str:
    """One line naming each environment variable that failed validation and why, e.g. `REKEY_KAFKA_SASL_MECHANISM
    ('OAUTHBEARER'): Input should be 'PLAIN', ...` (pydantic names the model's field, not the variable), and its
    key in the config file when there is one."""
    model = _settings_types().get(error.title)
    prefix = str(model.model_config.get("env_prefix", "")) if model else "REKEY_"
    config_file = os.environ.get(CONFIG_FILE_VARIABLE)
    problems = []
    for problem in error.errors():
        if not problem["loc"]:
            problems.append(problem["msg"].removeprefix("Value error, "))
            continue
        names = [str(part) for part in problem["loc"]]
        where = f"{prefix}{'_'.join(names).upper()}"
        if config_file:
            where += f" (or {'.'.join([*config_section(prefix), *names])} in {config_file})"
        problems.append(f"{where} ({problem['input']!r}): {problem['msg']}")
    return "invalid setting " + "; ".join(problems)

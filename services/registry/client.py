"""A synchronous client for the Confluent Schema Registry REST API (httpx), caching ids and parsed schemas.

Works against Confluent Schema Registry and compatible servers (the embedded Apicurio Registry serves the API
under `/apis/ccompat/v7`; `RegistrySettings.url` is that base URL). Schemas are parsed once: a registered or
fetched schema is cached by id together with its parsed form. Given a `SchemaIdMemory`, a registration keeps
its id there, and one that finds the registry unreachable uses the id remembered for the same schema
(`services.registry.memory`).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, get_args
from urllib.parse import quote

import httpx
import structlog

from kafka_rekey.services.registry.errors import (
    IncompatibleSchema,
    RegistryUnavailable,
    SchemaNotFound,
    SchemaRegistryError,
)
from kafka_rekey.services.registry.memory import SchemaIdMemory
from kafka_rekey.services.settings import RegistrySettings
from kafka_rekey.shared.avro import ParsedSchema, parse_schema, schema_text

CompatibilityLevel = Literal[
    "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE"
]
COMPATIBILITY_LEVELS: tuple[str, ...] = get_args(CompatibilityLevel)
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_SUBJECT_NOT_FOUND = 40401

log = structlog.get_logger()


@dataclass(frozen=True)
class RegisteredSchema:
    schema_id: int
    text: str
    parsed: ParsedSchema


class SchemaRegistryClient:
    """`register`, `schema_by_id`, `set_compatibility` and `test_compatibility` for Avro schemas."""

    def __init__(self, settings: RegistrySettings, timeout: float = 10.0, memory: SchemaIdMemory | None = None) -> None:
        self.url = settings.url.rstrip("/")
        auth = None
        headers = {"Content-Type": _CONTENT_TYPE, "Accept": f"{_CONTENT_TYPE}, application/json"}
        if settings.username:
            password = settings.password.get_secret_value() if settings.password else ""
            auth = httpx.BasicAuth(settings.username, password)
        if settings.bearer_token:
            headers["Authorization"] = f"Bearer {settings.bearer_token.get_secret_value()}"
        verify: ssl.SSLContext | bool = True
        if settings.ssl_ca_location:
            verify = ssl.create_default_context(cafile=str(settings.ssl_ca_location))
        self._http = httpx.Client(base_url=self.url, auth=auth, timeout=timeout, headers=headers, verify=verify)
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, RegisteredSchema] = {}
        self.memory = memory
        self.recalled: dict[str, int] = {}
        """Subjects whose id came from `memory` because the registry was unreachable."""
        self.outage: RegistryUnavailable | None = None

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- API -----------------------------------------------------------------------------------------
    def register(self, subject: str, schema: Mapping[str, Any] | str) -> int:
        """Register `schema` under `subject` (or find it registered) and return its id; cached per subject."""
        text = schema_text(schema)
        cached = self._ids.get((subject, text))
        if cached is not None:
            return cached
        parsed = parse_schema(text)
        try:
            body = self._call("POST", f"/subjects/{_quote(subject)}/versions", f"registering a schema under subject "
                              f"{subject!r}", subject=subject, json={"schema": text})
        except RegistryUnavailable as error:
            schema_id = self._recall(subject, text, error)
        else:
            schema_id = _int_field(body, "id", f"{self.url} answered a registration under {subject!r} without an id")
            if self.memory is not None:
                self.memory.remember(self.url, subject, text, schema_id)
        self._ids[(subject, text)] = schema_id
        self._schemas.setdefault(schema_id, RegisteredSchema(schema_id, text, parsed))
        return schema_id

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The (Avro) schema with this id, fetched and parsed once."""
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        body = self._call("GET", f"/schemas/ids/{schema_id}", f"looking up schema id {schema_id}")
        kind = body.get("schemaType", "AVRO")
        if kind != "AVRO" or not isinstance(body.get("schema"), str):
            raise SchemaRegistryError(f"schema id {schema_id} at {self.url} is a {kind} schema, not an Avro one")
        text = body["schema"]
        registered = RegisteredSchema(schema_id, text, parse_schema(text))
        self._schemas[schema_id] = registered
        return registered

    def writer_schema_text(self, schema_id: int) -> str | None:
        """The text of the Avro schema with this id, None when the registry holds none under it (the lookup of
        `shared.translation.AvroValues`)."""
        try:
            return self.schema_by_id(schema_id).text
        except SchemaNotFound:
            return None

    def set_compatibility(self, subject: str, level: CompatibilityLevel | str) -> None:
        """Set the compatibility level the registry enforces for new versions of `subject`."""
        if level not in COMPATIBILITY_LEVELS:
            raise ValueError(f"compatibility level {level!r} for subject {subject!r} is not one of "
                             f"{', '.join(COMPATIBILITY_LEVELS)}")
        self._call("PUT", f"/config/{_quote(subject)}", f"setting compatibility {level} on subject {subject!r}",
                   subject=subject, json={"compatibility": level})

    def test_compatibility(self, subject: str, schema: Mapping[str, Any] | str) -> bool:
        """Whether `schema` may become the next version of `subject`; True when the subject has no version."""
        try:
            body = self._call(
                "POST", f"/compatibility/subjects/{_quote(subject)}/versions/latest",
                f"testing compatibility under subject {subject!r}", subject=subject,
                json={"schema": schema_text(schema)},
            )
        except SchemaNotFound as missing:
            if missing.error_code == _SUBJECT_NOT_FOUND:
                return True
            raise
        verdict = body.get("is_compatible")
        if not isinstance(verdict, bool):
            raise SchemaRegistryError(f"{self.url} answered a compatibility test for {subject!r} without "
                                      f"is_compatible: {body}", subject=subject)
        return verdict

    def log_recalled(self) -> None:
        """One line when registrations ran on remembered ids (the registry unreachable): which subjects."""
        if self.recalled and self.memory is not None:
            log.warning("schema registry unreachable: using the schema ids remembered from an earlier registration",
                        registry=self.url, subjects=dict(sorted(self.recalled.items())),
                        memory=str(self.memory.path), error=str(self.outage))

    def _recall(self, subject: str, text: str, outage: RegistryUnavailable) -> int:
        if self.memory is None:
            raise outage
        schema_id = self.memory.recall(self.url, subject, text)
        if schema_id is None:
            raise RegistryUnavailable(f"{outage}; no id remembered for this schema in {self.memory.path}",
                                      subject=subject) from outage
        self.recalled[subject] = schema_id
        self.outage = outage
        return schema_id

    # -- transport -----------------------------------------------------------------------------------
    def _call(self, method: str, path: str, action: str, subject: str | None = None,
              json: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, json=json)
        except httpx.TransportError as error:
            raise RegistryUnavailable(
                f"schema registry at {self.url} is unreachable while {action}: {error!r}", subject=subject
            ) from error
        body = _json(response)
        if response.is_success:
            return body
        message = str(body.get("message") or response.text.strip() or response.reason_phrase)
        error_code = body.get("error_code") if isinstance(body.get("error_code"), int) else None
        text = (f"schema registry at {self.url} refused {action}: {message} "
                f"(HTTP {response.status_code}, error_code {error_code})")
        error_type: type[SchemaRegistryError] = SchemaRegistryError
        if response.status_code == 409:
            error_type = IncompatibleSchema
        elif response.status_code == 404:
            error_type = SchemaNotFound
        elif response.status_code in (401, 403):
            text += "; check REKEY_REGISTRY_USERNAME / REKEY_REGISTRY_PASSWORD"
        elif response.status_code >= 500:
            error_type = RegistryUnavailable
        raise error_type(text, subject=subject, status=response.status_code, error_code=error_code)


def _quote(subject: str) -> str:
    return quote(subject, safe="")


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _int_field(body: dict[str, Any], name: str, message: str) -> int:
    value = body.get(name)
    if not isinstance(value, int):
        raise SchemaRegistryError(f"{message}: {body}")
    return value

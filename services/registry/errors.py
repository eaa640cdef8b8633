"""Schema registry errors; each message names the registry, the subject (or schema id) and what it answered."""

from __future__ import annotations


class SchemaRegistryError(RuntimeError):
    """The registry refused a request, or answered something rekey cannot use."""

    def __init__(self, message: str, *, subject: str | None = None, status: int | None = None,
                 error_code: int | None = None) -> None:
        super().__init__(message)
        self.subject = subject
        self.status = status
        self.error_code = error_code


class RegistryUnavailable(SchemaRegistryError):
    """The registry could not be reached (connection refused, timeout, DNS): nothing was validated."""


class IncompatibleSchema(SchemaRegistryError):
    """The registry rejected a schema under the subject's compatibility level (HTTP 409)."""


class SchemaNotFound(SchemaRegistryError):
    """No such subject, version or schema id (HTTP 404)."""

"""Field-level checks shared by the source formats; each failure raises `Invalid` carrying the poison pill."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

import msgspec

from kafka_rekey.shared.translation.outcomes import PoisonPill, PoisonReason

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MS = timedelta(milliseconds=1)
LONG_MAX = 2**63 - 1


class Invalid(Exception):
    """Internal: raised by the checks below, turned into the returned PoisonPill by `translate`."""

    def __init__(self, pill: PoisonPill) -> None:
        super().__init__(pill.message)
        self.pill = pill


def fail(reason: PoisonReason, message: str, field: str | None = None) -> NoReturn:
    raise Invalid(PoisonPill(reason, message, field))


_fast_decode = msgspec.json.Decoder().decode


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def json_object(value: bytes, what: str) -> dict[str, Any]:
    """The value as a JSON object (UTF-8, strict JSON: no NaN/Infinity)."""
    try:
        document = _fast_decode(value)  # the common case: msgspec checks the UTF-8 as it goes
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return _slow_json_object(value, what)
    if not isinstance(document, dict):
        fail(PoisonReason.SCHEMA_INVALID, f"{what} is a JSON {type(document).__name__}, expected an object")
    return document


def _slow_json_object(value: bytes, what: str) -> dict[str, Any]:
    """`json_object` for what msgspec refused: the error, or what only the standard library takes."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as error:
        fail(PoisonReason.UNDECODABLE, f"{what} is not UTF-8 text: {error}")
    # msgspec refuses a little that the standard library takes (lone surrogate escapes, integers past 64 bits):
    # the standard library decides those, and words the error for what neither takes.
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        fail(PoisonReason.UNDECODABLE, f"{what} is not JSON: {str(error)[:200]}")
    if not isinstance(document, dict):
        fail(PoisonReason.SCHEMA_INVALID, f"{what} is a JSON {type(document).__name__}, expected an object")
    return document


def text(value: object, name: str) -> str:
    """`value` as text that Avro can carry (valid Unicode)."""
    if not isinstance(value, str):
        fail(PoisonReason.SCHEMA_INVALID, f"{name} is a {type(value).__name__}, expected a string", name)
    if value.isascii():  # CPython knows this without a scan
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        fail(PoisonReason.SCHEMA_INVALID, f"{name} contains a lone surrogate escape (not valid Unicode)", name)
    return value


def identifier(container: dict[str, Any], name: str, missing: PoisonReason, allow_int: bool = False,
               label: str | None = None) -> str:
    """A required, non-blank id: absent/null/blank -> `missing`; a wrong type -> schema_invalid."""
    label = label or name
    value = container.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        fail(missing, f"{label} is missing or empty", label)
    if allow_int and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text(value, label)


def optional_text(container: dict[str, Any], name: str, label: str | None = None) -> str | None:
    value = container.get(name)
    return None if value is None else text(value, label or name)


def iso_millis(value: object, name: str) -> int:
    """An ISO-8601 timestamp with a UTC offset (e.g. `2023-10-27T14:30:00Z`) as epoch milliseconds."""
    if value is None:
        fail(PoisonReason.BAD_TIMESTAMP, f"{name} is missing", name)
    if not isinstance(value, str):
        fail(PoisonReason.BAD_TIMESTAMP, f"{name} is a {type(value).__name__}, expected an ISO-8601 string", name)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        fail(PoisonReason.BAD_TIMESTAMP, f"{name} {value[:64]!r} is not an ISO-8601 timestamp", name)
    if moment.tzinfo is None or moment.utcoffset() is None:
        fail(PoisonReason.BAD_TIMESTAMP, f"{name} {value[:64]!r} has no UTC offset (ambiguous)", name)
    try:
        return (moment - EPOCH) // ONE_MS
    except OverflowError:
        fail(PoisonReason.BAD_TIMESTAMP, f"{name} {value[:64]!r} is out of range", name)


def long_value(value: object, name: str, reason: PoisonReason = PoisonReason.SCHEMA_INVALID) -> int:
    """A non-negative integer that fits an Avro long."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= LONG_MAX:
        fail(reason, f"{name} {str(value)[:64]!r} is not a non-negative 64-bit integer", name)
    return value


_sorted_encode = msgspec.json.Encoder(order="sorted").encode


def canonical_json(value: Any, name: str) -> str:
    """Deterministic compact JSON (sorted keys, UTF-8, shortest round-trip floats) of a decoded JSON value, the
    same on every run and host."""
    try:
        return _sorted_encode(value).decode("utf-8")
    except UnicodeEncodeError:
        fail(PoisonReason.SCHEMA_INVALID, f"{name} contains a lone surrogate escape (not valid Unicode)", name)
    except RecursionError:
        fail(PoisonReason.SCHEMA_INVALID, f"{name} is nested too deeply", name)

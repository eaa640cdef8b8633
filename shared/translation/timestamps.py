"""Event times as sources encode them, to epoch milliseconds.

- ISO-8601 with a UTC offset (`Z` or `+02:00`), 0 to 9 fractional digits (beyond milliseconds truncated); a time
  without an offset is refused as ambiguous.
- Epoch seconds, milliseconds, microseconds or nanoseconds, as JSON numbers or numeric strings. With the unit
  unknown (`TimeEncoding.EPOCH`), the magnitude decides: below 1e11 seconds, below 1e14 milliseconds, below 1e17
  microseconds, else nanoseconds; that reads every instant from 1973 to 5138 right in all four units.
- Debezium's semantic types, named in the schema block of the JSON converter: `io.debezium.time.Timestamp` (ms),
  `MicroTimestamp` (µs), `NanoTimestamp` (ns), `ZonedTimestamp` (ISO-8601 text), Kafka Connect's `Timestamp`
  (ms). `encoding_of_connect_type` maps them.

`TimeEncoding.AUTO` takes text as ISO-8601 (or a numeric string as an epoch) and a number as an epoch.
"""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import NoReturn

from kafka_rekey.shared.translation.fields import EPOCH, ONE_MS, fail
from kafka_rekey.shared.translation.outcomes import PoisonReason


class TimeEncoding(StrEnum):
    AUTO = "auto"
    ISO8601 = "iso8601"
    EPOCH = "epoch"
    EPOCH_S = "epoch_s"
    EPOCH_MS = "epoch_ms"
    EPOCH_US = "epoch_us"
    EPOCH_NS = "epoch_ns"


# Units per millisecond, as a fraction (numerator, denominator): seconds are 1/1000 of them.
_UNITS_PER_MS = {TimeEncoding.EPOCH_S: (1, 1000), TimeEncoding.EPOCH_MS: (1, 1), TimeEncoding.EPOCH_US: (1000, 1),
                 TimeEncoding.EPOCH_NS: (1_000_000, 1)}
_CONNECT_TYPES = {
    "io.debezium.time.Timestamp": TimeEncoding.EPOCH_MS,
    "io.debezium.time.MicroTimestamp": TimeEncoding.EPOCH_US,
    "io.debezium.time.NanoTimestamp": TimeEncoding.EPOCH_NS,
    "io.debezium.time.ZonedTimestamp": TimeEncoding.ISO8601,
    "org.apache.kafka.connect.data.Timestamp": TimeEncoding.EPOCH_MS,
}
_MIN_GUESSED_MS, _MAX_GUESSED_MS = 10**11, 10**14  # what a guess (EPOCH) takes for milliseconds
# Epoch milliseconds an Avro long and Python's datetime both hold: years 1 to 9999.
_MIN_MS, _MAX_MS = -62_135_596_800_000, 253_402_300_799_999


def encoding_of_connect_type(name: object) -> TimeEncoding:
    """The encoding a Kafka Connect / Debezium schema `name` implies (AUTO for any other or no name)."""
    return _CONNECT_TYPES.get(name, TimeEncoding.AUTO) if isinstance(name, str) else TimeEncoding.AUTO


def epoch_millis(value: object, name: str, encoding: TimeEncoding = TimeEncoding.AUTO) -> int:
    """`value` (the field `name`) as epoch milliseconds; a `bad_timestamp` poison pill naming the field if not."""
    if value.__class__ is int and _MIN_GUESSED_MS <= value < _MAX_GUESSED_MS and (
            encoding is TimeEncoding.AUTO or encoding is TimeEncoding.EPOCH_MS):
        return value  # epoch milliseconds, the common case, at once
    if value is None:
        fail(PoisonReason.BAD_TIMESTAMP, f"{name} is missing", name)
    if isinstance(value, str):
        if encoding is TimeEncoding.ISO8601 or (encoding is TimeEncoding.AUTO and not _numeric(value)):
            return _iso_millis(value, name)
        number: int | float = _parse_number(value, name)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if encoding is TimeEncoding.ISO8601:
            _bad(name, value, "is a number, expected an ISO-8601 string")
        number = value
    else:
        fail(PoisonReason.BAD_TIMESTAMP,
             f"{name} is a {type(value).__name__}, expected an ISO-8601 string or an epoch number", name)
    return _epoch(number, name, TimeEncoding.EPOCH if encoding is TimeEncoding.AUTO else encoding)


def _numeric(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and stripped.lstrip("+-").replace(".", "", 1).isdigit()


def _parse_number(text: str, name: str) -> int | float:
    try:
        return int(text) if text.strip().lstrip("+-").isdigit() else float(text)
    except ValueError:
        _bad(name, text, "is not an epoch number")


def _epoch(number: int | float, name: str, encoding: TimeEncoding) -> int:
    if isinstance(number, float) and not math.isfinite(number):
        _bad(name, number, "is not a finite number")
    if encoding is TimeEncoding.EPOCH:
        magnitude = abs(number)
        encoding = (TimeEncoding.EPOCH_S if magnitude < 1e11 else TimeEncoding.EPOCH_MS if magnitude < 1e14
                    else TimeEncoding.EPOCH_US if magnitude < 1e17 else TimeEncoding.EPOCH_NS)
    units, per = _UNITS_PER_MS[encoding]
    # Integers exactly; a float rounded to nanoseconds first, so that 1.001 s is 1001 ms, not 1000.9999...
    if isinstance(number, int):
        millis = number * per // units
    else:
        scaled = number * per / units
        if not _MIN_MS - 1 <= scaled <= _MAX_MS + 1:  # also a float scaled past its maximum: infinity
            _bad(name, number, f"is out of range as {encoding.value}")
        millis = math.floor(round(scaled, 6))
    if not _MIN_MS <= millis <= _MAX_MS:
        _bad(name, number, f"is out of range as {encoding.value}")
    return millis


def _iso_millis(text: str, name: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        _bad(name, text, "is not an ISO-8601 timestamp")
    if moment.utcoffset() is None:
        _bad(name, text, "has no UTC offset (ambiguous)")
    try:
        return (moment - EPOCH) // ONE_MS
    except OverflowError:
        _bad(name, text, "is out of range")


def _bad(name: str, value: object, problem: str) -> NoReturn:
    fail(PoisonReason.BAD_TIMESTAMP, f"{name} {str(value)[:64]!r} {problem}", name)

"""A captured row's column values as Kafka Connect encodes them -> plain values a consumer reads without Connect's
schema (the CDC payload).

The JSON converter's schema block (or the Avro converter's writer schema) names each column's Connect type; that
name, not the value, says what the value means:

- `org.apache.kafka.connect.data.Decimal` (bytes: the unscaled two's-complement integer, base64 in JSON; the scale
  a parameter) and `io.debezium.data.VariableScaleDecimal` (`{scale, value}`) -> the exact decimal as a string
  (`"1.25"`, the column's scale kept: `"1.00"`);
- Debezium's and Connect's instants (`Timestamp`, `MicroTimestamp`, `NanoTimestamp`, Connect's `Timestamp`:
  epoch numbers of a `timestamp` column, which has no zone) -> ISO-8601 without an offset
  (`"2026-11-26T10:00:00.123456"`), `Date` (days) -> `"2026-11-26"`, `Time`/`MicroTime`/`NanoTime` (since
  midnight) -> `"10:00:00.123456"`; text types (`ZonedTimestamp`, `Json`, `Uuid`, ...) stay as they are;
- a column the change does not carry (an unchanged TOASTed value: Debezium writes its placeholder
  `__debezium_unavailable_value`) is left out of the row, and its name listed under `UNCHANGED` (sorted), so
  that the placeholder is never taken for the value.

Values of other types, and every value when there is no schema (JSON converter with `schemas.enable=false`), are
kept as encoded: set `decimal.handling.mode=string` there.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

UNAVAILABLE = "__debezium_unavailable_value"
"""Debezium's default `unavailable.value.placeholder`: a TOASTed value the change does not carry."""
UNCHANGED = "__unchanged_columns"
"""The payload key listing the columns a change left unchanged and did not carry (a reserved column name)."""
_UNAVAILABLE_BYTES = UNAVAILABLE.encode()
_UNAVAILABLE_BASE64 = base64.b64encode(_UNAVAILABLE_BYTES).decode()
_UNAVAILABLE_BASE64_BYTES = _UNAVAILABLE_BASE64.encode()

ConnectType = tuple[str, str | None]
"""A column's Connect type name and its decimal scale parameter (None when it has none)."""
ConnectTypes = tuple[tuple[str, ConnectType], ...]
"""A row's typed columns: `(column, connect type)` pairs."""
Converter = Callable[[Any], Any]

_EPOCH = datetime(1970, 1, 1)
_EPOCH_DAY = date(1970, 1, 1)


def _instant(units_per_second: int) -> Converter:
    def convert(value: Any) -> Any:
        if value.__class__ is not int:
            return value
        seconds, rest = divmod(value, units_per_second)
        try:
            moment = _EPOCH + timedelta(seconds=seconds, microseconds=rest * 1_000_000 // units_per_second)
        except OverflowError:
            return value
        return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")
    return convert


def _time_of_day(units_per_second: int) -> Converter:
    def convert(value: Any) -> Any:
        if value.__class__ is not int:
            return value
        seconds, rest = divmod(value, units_per_second)
        micros = rest * 1_000_000 // units_per_second
        clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        return f"{clock}.{micros:06d}" if micros else clock
    return convert


def _day(value: Any) -> Any:
    if value.__class__ is not int:
        return value
    try:
        return (_EPOCH_DAY + timedelta(days=value)).isoformat()
    except OverflowError:
        return value


def _unscaled(value: Any) -> int | None:
    """The unscaled integer of a Connect decimal: bytes (Avro) or their base64 (JSON)."""
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
    if not isinstance(value, bytes | bytearray) or not value:
        return None
    return int.from_bytes(value, "big", signed=True)


def _decimal_string(unscaled: int, scale: int) -> str:
    return format(Decimal(unscaled).scaleb(-scale), "f")


def _fixed_decimal(scale: int) -> Converter:
    def convert(value: Any) -> Any:
        unscaled = _unscaled(value)
        return value if unscaled is None else _decimal_string(unscaled, scale)
    return convert


def _variable_decimal(value: Any) -> Any:
    if not isinstance(value, dict) or not isinstance(value.get("scale"), int):
        return value
    unscaled = _unscaled(value.get("value"))
    return value if unscaled is None else _decimal_string(unscaled, value["scale"])


_BY_NAME: dict[str, Converter] = {
    "io.debezium.time.Timestamp": _instant(1_000),
    "io.debezium.time.MicroTimestamp": _instant(1_000_000),
    "io.debezium.time.NanoTimestamp": _instant(1_000_000_000),
    "org.apache.kafka.connect.data.Timestamp": _instant(1_000),
    "io.debezium.time.Date": _day,
    "org.apache.kafka.connect.data.Date": _day,
    "io.debezium.time.Time": _time_of_day(1_000),
    "io.debezium.time.MicroTime": _time_of_day(1_000_000),
    "io.debezium.time.NanoTime": _time_of_day(1_000_000_000),
    "org.apache.kafka.connect.data.Time": _time_of_day(1_000),
    "io.debezium.data.VariableScaleDecimal": _variable_decimal,
}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"


def _converter(connect_type: ConnectType) -> Converter | None:
    name, scale = connect_type
    if name == _DECIMAL:
        return _fixed_decimal(int(scale)) if scale is not None and scale.lstrip("-").isdigit() else None
    return _BY_NAME.get(name)


@lru_cache(maxsize=1024)
def row_converters(types: ConnectTypes) -> tuple[tuple[str, Converter], ...]:
    """The converters of a row's typed columns (`(column, connect type)` pairs), built once per row schema."""
    return tuple((column, converter) for column, connect_type in types
                 if (converter := _converter(connect_type)) is not None)


def _unavailable(value: Any) -> bool:
    if value.__class__ is str:
        return value in (UNAVAILABLE, _UNAVAILABLE_BASE64)
    if isinstance(value, bytes):
        return value == _UNAVAILABLE_BYTES
    return isinstance(value, list) and len(value) == 1 and _unavailable(value[0])


def may_hold_unavailable(raw: bytes) -> bool:
    """Whether a record's bytes (JSON or Avro) can hold an unavailable value: without the placeholder in them,
    `plain_row` need not look for it."""
    # `in` first tries the needle as an integer, raising and formatting a TypeError on every call; `find` does not.
    return raw.find(_UNAVAILABLE_BYTES) >= 0 or raw.find(_UNAVAILABLE_BASE64_BYTES) >= 0


def plain_row(row: Mapping[str, Any], converters: tuple[tuple[str, Converter], ...],
              unavailable: bool = True) -> dict[str, Any]:
    """`row` with its typed columns converted and, when it may hold any (`unavailable`), the columns it does not
    carry listed under `UNCHANGED`."""
    plain = dict(row)
    for column, convert in converters:
        value = plain.get(column)
        if value is not None:
            plain[column] = convert(value)
    if not unavailable:
        return plain
    unchanged = sorted(column for column, value in plain.items() if value is not None and _unavailable(value))
    if unchanged:
        for column in unchanged:
            del plain[column]
        plain[UNCHANGED] = unchanged
    return plain


class RowTypes:
    """The Connect types of a change event's row images (`before`, `after`) and their converters, built once per
    schema (a JSON converter's schema block, an Avro writer schema)."""

    __slots__ = ("converters", "names", "types")

    def __init__(self, types: Mapping[str, ConnectTypes]) -> None:
        self.types = dict(types)
        self.converters = {image: row_converters(image_types) for image, image_types in types.items()}
        self.names = {image: {column: connect_type[0] for column, connect_type in image_types}
                      for image, image_types in types.items()}

    @classmethod
    def of_schema_block(cls, schema: object) -> RowTypes:
        return cls({image: schema_block_types(schema, image) for image in ("before", "after")})

    def name(self, image: str, column: str) -> str | None:
        """The Connect type name of `image`'s `column` (None: it has none)."""
        names = self.names.get(image)
        return None if names is None else names.get(column)

    def converters_of(self, image: str) -> tuple[tuple[str, Converter], ...]:
        return self.converters.get(image, ())


NO_TYPES = RowTypes({})
"""A change without a schema (JSON converter with `schemas.enable=false`): values stay as encoded."""


def schema_block_types(schema: object, image: str) -> ConnectTypes:
    """`(column, connect type)` of the named columns of `image` in the JSON converter's schema block."""
    for block in _fields(schema):
        if block.get("field") == image:
            return tuple((str(column["field"]), (column["name"], _scale(column.get("parameters"))))
                         for column in _fields(block) if isinstance(column.get("name"), str))
    return ()


def _scale(parameters: object) -> str | None:
    scale = parameters.get("scale") if isinstance(parameters, dict) else None
    return scale if isinstance(scale, str) else None


def _fields(block: object) -> list[dict[str, Any]]:
    fields = block.get("fields") if isinstance(block, dict) else None
    return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []

"""Event times in every encoding sources use: ISO-8601 with 0-9 fractional digits and any offset, epoch
seconds to nanoseconds as numbers or numeric strings, Debezium's semantic types."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kafka_rekey.shared.translation.fields import Invalid
from kafka_rekey.shared.translation.outcomes import PoisonReason
from kafka_rekey.shared.translation.timestamps import TimeEncoding, encoding_of_connect_type, epoch_millis

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
moments = st.datetimes(min_value=datetime(1974, 1, 1), max_value=datetime(5000, 1, 1), timezones=st.just(UTC))
offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda minutes: timezone(timedelta(minutes=minutes)))


def _millis(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(milliseconds=1)


@given(moments, offsets, st.integers(0, 9), st.integers(0, 999))
def test_iso_8601_with_any_offset_and_fraction(moment: datetime, offset: timezone, digits: int, nanos: int) -> None:
    local = moment.astimezone(offset)
    fraction = f"{local.microsecond:06d}{nanos:03d}"[:digits]
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if digits else "") + local.strftime("%z")
    expected = _millis(moment.replace(microsecond=int(fraction.ljust(6, "0")[:6]) if digits else 0))
    assert epoch_millis(text, "t") == expected
    assert epoch_millis(text.replace("+0000", "Z"), "t", TimeEncoding.ISO8601) == expected


@given(moments)
def test_every_epoch_unit_by_magnitude_as_number_or_text(moment: datetime) -> None:
    millis = _millis(moment)
    micros = millis * 1000 + 999
    for value, expected in [(millis // 1000, millis // 1000 * 1000), (millis, millis), (micros, millis),
                            (micros * 1000 + 999, millis)]:
        assert epoch_millis(value, "t") == expected
        assert epoch_millis(str(value), "t", TimeEncoding.EPOCH) == expected


@pytest.mark.parametrize(("value", "encoding", "millis"), [
    (1, TimeEncoding.EPOCH_S, 1000), (1.001, TimeEncoding.EPOCH_S, 1001), (1_000_000, TimeEncoding.EPOCH_US, 1000),
    (5, TimeEncoding.EPOCH_MS, 5), (1_500_000, TimeEncoding.EPOCH_NS, 1), ("1700000000.5", TimeEncoding.AUTO,
                                                                          1_700_000_000_500),
])
def test_a_declared_unit_wins_over_the_magnitude(value: object, encoding: TimeEncoding, millis: int) -> None:
    assert epoch_millis(value, "t", encoding) == millis


@pytest.mark.parametrize(("value", "encoding", "problem"), [
    (None, TimeEncoding.AUTO, "is missing"),
    (True, TimeEncoding.AUTO, "is a bool"),
    ({"s": 1}, TimeEncoding.AUTO, "is a dict"),
    ("2023-10-27T14:30:00", TimeEncoding.AUTO, "has no UTC offset"),
    ("27/10/2023", TimeEncoding.AUTO, "is not an ISO-8601 timestamp"),
    (1698417000250, TimeEncoding.ISO8601, "is a number, expected an ISO-8601 string"),
    ("1698417000250", TimeEncoding.ISO8601, "is not an ISO-8601 timestamp"),
    (float("nan"), TimeEncoding.AUTO, "is not a finite number"),
    (10**30, TimeEncoding.EPOCH_MS, "is out of range as epoch_ms"),
])
def test_a_bad_time_is_a_poison_pill_naming_the_field(value: object, encoding: TimeEncoding, problem: str) -> None:
    with pytest.raises(Invalid) as raised:
        epoch_millis(value, "detail.eventBody.eventTime", encoding)
    pill = raised.value.pill
    assert (pill.reason_code, pill.field) == (PoisonReason.BAD_TIMESTAMP, "detail.eventBody.eventTime")
    assert problem in pill.message


@example(1.797693134862316e305, TimeEncoding.EPOCH_S)  # scaled to milliseconds, a float past its maximum
@given(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40), st.sampled_from(TimeEncoding))
def test_any_value_is_a_time_or_a_poison_pill(value: object, encoding: TimeEncoding) -> None:
    try:
        assert isinstance(epoch_millis(value, "t", encoding), int)
    except Invalid as invalid:
        assert invalid.pill.reason_code == PoisonReason.BAD_TIMESTAMP


def test_debezium_semantic_types() -> None:
    assert encoding_of_connect_type("io.debezium.time.MicroTimestamp") is TimeEncoding.EPOCH_US
    assert encoding_of_connect_type("io.debezium.time.ZonedTimestamp") is TimeEncoding.ISO8601
    assert encoding_of_connect_type(None) is TimeEncoding.AUTO

"""A decoded InteractionEvent becomes a SinkEvent, or an InvalidEvent naming the field."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kafka_rekey.shared.sink.events import InvalidEvent, event_from_record
from tests.support.domain import domain_record


def test_timestamp_millis_as_datetime_or_int() -> None:
    record = domain_record("o", "i", 3, 1_714_550_400_123)
    as_datetime = {**record, "event_time": datetime(2024, 5, 1, 8, 0, 0, 123_000, tzinfo=UTC)}
    assert event_from_record(record, "o:i") == event_from_record(as_datetime, "o:i")
    assert event_from_record(record, "o:i").event_time == 1_714_550_400_123


@pytest.mark.parametrize(("change", "key", "message"), [
    ({"org_id": ""}, "o:i", "'org_id' must be a non-empty string"),
    ({"sequence": 0}, "o:i", "'sequence' must be 1 or more"),
    ({"source": None}, "o:i", "'source' must be a record"),
    ({}, "", "has no key"),
])
def test_unusable_records_name_the_field(change: dict[str, object], key: str, message: str) -> None:
    with pytest.raises(InvalidEvent, match=message):
        event_from_record({**domain_record("o", "i", 1, 0), **change}, key)

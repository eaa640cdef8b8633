"""The worker's batch sizing: about `batch_size` items a batch, whatever its records carry."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.services.runtime.batching import BATCH_SECONDS, next_request


def test_records_of_one_item_each_are_asked_for_a_whole_batch_at_a_time() -> None:
    assert next_request(5_000, records=5_000, items=5_000) == 5_000
    assert next_request(5_000, records=12, items=12) == 5_000
    assert next_request(5_000, records=0, items=0) == 5_000


def test_records_carrying_many_items_are_asked_for_fewer_at_a_time() -> None:
    # A sequence stage alone, catching up on internal records of 150 envelopes each.
    assert next_request(5_000, records=5_000, items=750_000) == 33
    # Both ACL stages with two families: a third of the batch's items are source records.
    assert next_request(5_000, records=2_530, items=7_500) == 1_686


def test_at_least_one_record_is_asked_for() -> None:
    assert next_request(100, records=1, items=1_000) == 1


@given(st.integers(1, 100_000), st.integers(1, 10_000), st.integers(0, 100))
def test_the_next_batch_holds_about_batch_size_items_at_the_last_batch_s_mix(batch_size: int, records: int,
                                                                             extra_per_record: int) -> None:
    items = records * (1 + extra_per_record)
    request = next_request(batch_size, records, items)
    assert 1 <= request <= batch_size
    assert request * items / records <= max(batch_size, items / records)


def test_a_batch_is_kept_to_what_the_last_batch_s_pace_processes_in_batch_seconds() -> None:
    # 5,000 items in four times the bound: a quarter of them next.
    assert next_request(5_000, records=5_000, items=5_000, seconds=4 * BATCH_SECONDS) == 1_250
    # Internal records of 100 envelopes each, processed at the same pace.
    assert next_request(5_000, records=50, items=5_000, seconds=4 * BATCH_SECONDS) == 12
    # Fast batches ask for a whole batch again, never more.
    assert next_request(5_000, records=200, items=200, seconds=BATCH_SECONDS / 100) == 5_000
    assert next_request(5_000, records=10, items=10, seconds=10 * BATCH_SECONDS) == 1

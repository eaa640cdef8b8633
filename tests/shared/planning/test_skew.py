"""The skew simulator on a Zipf-skewed sample and on an even one."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.shared.planning import SampleRow, SimulationParams, SkewReport, simulate
from tests.shared.planning.zipf import zipf_rows

ZIPF = zipf_rows()
PARAMS = SimulationParams(peak_rate=20_000, partitions=16, consumer_capacity=2_000)


@pytest.fixture(scope="module")
def report() -> SkewReport:
    return simulate(ZIPF, PARAMS)


def test_org_keys_concentrate_the_hot_org_on_one_partition(report: SkewReport) -> None:
    org = report.strategy("org")
    hottest_org = report.hot_orgs[0]
    assert hottest_org.org_id == "org-000"
    assert org.hottest_partition == partition_for("org-000", 16)
    assert org.hottest_orgs[0].org_id == "org-000"
    assert org.skewed and org.skew > 3
    assert org.over_capacity and org.lag_growth > 0
    assert org.max_rate == pytest.approx(max(org.partition_rates))
    assert sum(org.partition_rates) == pytest.approx(20_000)


def test_org_interaction_and_salting_spread_the_load(report: SkewReport) -> None:
    org, salted = report.strategy("org"), report.strategy("salted")
    even = report.strategy("org_interaction")
    assert not even.skewed and even.skew < 1.2 and even.drain_seconds == 0
    assert salted.max_rate < org.max_rate / 2
    assert salted.distinct_keys < even.distinct_keys
    assert org.distinct_keys == 200


def test_recommends_a_dedicated_topic_for_the_dominant_org_and_salting_for_the_next(report: SkewReport) -> None:
    advice = {r.org_id: r for r in report.recommendations}
    assert advice["org-000"].action == "dedicated_topic"
    assert "dedicated topic" in advice["org-000"].reason
    salted = [r for r in report.recommendations if r.action == "salt"]
    assert salted and all(r.buckets_or_partitions >= 2 for r in salted)
    assert report.recommended_partitions == 10  # 20k/s over 2k/s per partition, even under org_interaction


def test_p95_lies_between_mean_and_max(report: SkewReport) -> None:
    org = report.strategy("org")
    assert org.mean_rate <= org.p95_rate <= org.max_rate


def test_backlog_never_drains_when_off_peak_load_still_exceeds_capacity() -> None:
    report = simulate(ZIPF, SimulationParams(peak_rate=20_000, partitions=16, consumer_capacity=2_000,
                                             offpeak_ratio=0.9))
    assert report.strategy("org").drain_seconds is None


def test_drain_time_of_the_hottest_partition() -> None:
    rows = [SampleRow("org-a", "i-1", 3.0), SampleRow("org-c", "i-2", 1.0)]
    assert partition_for("org-a", 2) != partition_for("org-c", 2)
    params = SimulationParams(peak_rate=4_000, partitions=2, consumer_capacity=2_000, peak_duration_s=100,
                              offpeak_ratio=0.5)
    org = simulate(rows, params).strategy("org")
    # hottest: 3000/s against 2000/s for 100 s -> 100k backlog, drained at 2000 - 1500 = 500/s after the peak
    assert org.max_rate == pytest.approx(3_000)
    assert org.lag_growth == pytest.approx(1_000)
    assert org.drain_seconds == pytest.approx(200)


def test_an_even_sample_needs_no_fix() -> None:
    rows = [SampleRow(f"org-{i}", f"int-{i}") for i in range(2_000)]
    report = simulate(rows, SimulationParams(peak_rate=1_000, partitions=4, consumer_capacity=1_000))
    assert report.hot_orgs == () and report.recommendations == ()
    assert not any(load.skewed for load in report.strategies)


@pytest.mark.parametrize("changes", [{"peak_rate": 0}, {"partitions": 0}, {"salt_buckets": 1},
                                     {"offpeak_ratio": 1.5}, {"consumer_capacity": 0}])
def test_invalid_parameters(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="out of range"):
        SimulationParams(**{"peak_rate": 10.0, "partitions": 2, **changes})  # type: ignore[arg-type]


def test_empty_sample() -> None:
    with pytest.raises(ValueError, match="the key sample is empty"):
        simulate([], PARAMS)

"""Skew simulator: how a key sample's load spreads over partitions under each key strategy, and what to do.

Each sample row carries a share of the peak rate (its weight over the total). Per strategy the rows' keys are
hashed exactly as production does (`shared.keys` + `partition_for`), giving a rate per partition, its max and
P95, and the consumer lag that follows at a given per-partition consumer capacity. Orgs that alone exceed a fair
partition share are "hot": the `salted` strategy salts them, and the report recommends salting or, for the
largest, a dedicated topic. An org is hot when its rate alone exceeds the consumer capacity or 1.5x the mean
partition rate, i.e. when keying by org alone would make its partition skewed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from kafka_rekey.shared.keys import KEY_STRATEGIES, ORDERING_GUARANTEES, KeyStrategy, base_key, salted_key
from kafka_rekey.shared.partitioning import partition_for
from kafka_rekey.shared.planning.samples import SampleRow
from kafka_rekey.shared.planning.sizing import required_partitions, skew_headroom

SKEW_THRESHOLD: Final = 1.5  # max/mean partition rate above which a strategy counts as skewed
DEDICATED_SHARE: Final = 0.25  # an org with this share of all traffic gets a dedicated topic recommended
REFERENCE_STRATEGY: Final[KeyStrategy] = "org_interaction"  # the default strategy sizing is based on
SALT_HEADROOM: Final = 1.5  # salt buckets / dedicated partitions keep each below 2/3 of consumer capacity


@dataclass(frozen=True)
class SimulationParams:
    peak_rate: float  # events/s over all keys at peak
    partitions: int
    consumer_capacity: float = 1000.0  # events/s one consumer sustains on one partition
    salt_buckets: int = 16
    peak_duration_s: float = 3600.0  # how long the peak lasts (lag accumulates meanwhile)
    offpeak_ratio: float = 0.5  # incoming rate after the peak, as a fraction of the peak rate

    def __post_init__(self) -> None:
        checks = [("peak rate", self.peak_rate > 0), ("partitions", self.partitions >= 1),
                  ("consumer capacity", self.consumer_capacity > 0), ("salt buckets", self.salt_buckets >= 2),
                  ("peak duration", self.peak_duration_s >= 0), ("off-peak ratio", 0 <= self.offpeak_ratio <= 1)]
        for name, ok in checks:
            if not ok:
                raise ValueError(f"{name} out of range: {self}")


@dataclass(frozen=True)
class OrgLoad:
    org_id: str
    rate: float  # events/s at peak
    share: float  # of all traffic


@dataclass(frozen=True)
class StrategyLoad:
    """One strategy's partition load at peak and the lag it causes."""

    strategy: KeyStrategy
    ordering: str
    distinct_keys: int
    partition_rates: tuple[float, ...]
    max_rate: float
    p95_rate: float
    mean_rate: float
    skew: float  # max / mean
    hottest_partition: int
    hottest_orgs: tuple[OrgLoad, ...]  # the largest contributors to the hottest partition
    over_capacity: tuple[int, ...]  # partitions whose rate exceeds the consumer capacity
    lag_growth: float  # events/s of lag added over all partitions during the peak
    drain_seconds: float | None  # time to drain the hottest partition's backlog after the peak; None: never

    @property
    def skewed(self) -> bool:
        return self.skew > SKEW_THRESHOLD or bool(self.over_capacity)


@dataclass(frozen=True)
class Recommendation:
    org_id: str
    action: Literal["salt", "dedicated_topic"]
    rate: float
    buckets_or_partitions: int
    reason: str


@dataclass(frozen=True)
class SkewReport:
    params: SimulationParams
    sample_rows: int
    strategies: tuple[StrategyLoad, ...]
    hot_orgs: tuple[OrgLoad, ...]
    recommendations: tuple[Recommendation, ...]
    recommended_partitions: int  # sizing for the reference strategy, headroom included

    def strategy(self, name: KeyStrategy) -> StrategyLoad:
        return next(s for s in self.strategies if s.strategy == name)


def _p95(values: Sequence[float]) -> float:
    """95th percentile with linear interpolation between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    position = 0.95 * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _org_rates(rows: Sequence[SampleRow], peak_rate: float) -> dict[str, float]:
    total = sum(row.weight for row in rows)
    rates: dict[str, float] = defaultdict(float)
    for row in rows:
        rates[row.org_id] += peak_rate * row.weight / total
    return rates


def _key(strategy: KeyStrategy, row: SampleRow, hot: frozenset[str], buckets: int) -> str:
    if strategy == "salted":
        if row.org_id in hot:
            return salted_key(row.org_id, row.interaction_id, buckets)[0]
        return base_key("org", row.org_id, row.interaction_id)
    return base_key(strategy, row.org_id, row.interaction_id)


def _load(strategy: KeyStrategy, rows: Sequence[SampleRow], params: SimulationParams,
          hot: frozenset[str]) -> StrategyLoad:
    total = sum(row.weight for row in rows)
    key_rates: dict[str, float] = defaultdict(float)
    key_orgs: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        key = _key(strategy, row, hot, params.salt_buckets)
        rate = params.peak_rate * row.weight / total
        key_rates[key] += rate
        key_orgs[key][row.org_id] += rate
    rates = [0.0] * params.partitions
    partition_orgs: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for key, rate in key_rates.items():
        partition = partition_for(key, params.partitions)
        rates[partition] += rate
        for org, org_rate in key_orgs[key].items():
            partition_orgs[partition][org] += org_rate
    hottest = max(range(params.partitions), key=rates.__getitem__)
    mean = params.peak_rate / params.partitions
    capacity = params.consumer_capacity
    contributors = sorted(partition_orgs[hottest].items(), key=lambda item: -item[1])[:3]
    backlog = max(0.0, rates[hottest] - capacity) * params.peak_duration_s
    offpeak = rates[hottest] * params.offpeak_ratio
    drain: float | None = 0.0 if backlog == 0 else (backlog / (capacity - offpeak) if capacity > offpeak else None)
    return StrategyLoad(
        strategy=strategy,
        ordering=ORDERING_GUARANTEES[strategy],
        distinct_keys=len(key_rates),
        partition_rates=tuple(rates),
        max_rate=rates[hottest],
        p95_rate=_p95(rates),
        mean_rate=mean,
        skew=rates[hottest] / mean,
        hottest_partition=hottest,
        hottest_orgs=tuple(OrgLoad(org, rate, rate / params.peak_rate) for org, rate in contributors),
        over_capacity=tuple(p for p, rate in enumerate(rates) if rate > capacity),
        lag_growth=sum(max(0.0, rate - capacity) for rate in rates),
        drain_seconds=drain,
    )


def _recommend(hot_orgs: Sequence[OrgLoad], params: SimulationParams) -> list[Recommendation]:
    recommendations = []
    for org in hot_orgs:
        spread = required_partitions(org.rate, params.consumer_capacity, SALT_HEADROOM)
        if org.share >= DEDICATED_SHARE or spread > params.partitions:
            recommendations.append(Recommendation(
                org.org_id, "dedicated_topic", org.rate, spread,
                f"{org.share:.0%} of all traffic ({org.rate:,.0f} events/s): give it a dedicated topic with "
                f"{spread} partitions, keyed org_id:interaction_id, so it cannot starve other orgs",
            ))
        else:
            buckets = max(2, spread)
            recommendations.append(Recommendation(
                org.org_id, "salt", org.rate, buckets,
                f"{org.rate:,.0f} events/s is too much for one partition under the org key: salt it into "
                f"{buckets} buckets (org_id:bucket), keeping per-interaction order",
            ))
    return recommendations


def simulate(rows: Sequence[SampleRow], params: SimulationParams) -> SkewReport:
    """Simulate every key strategy on `rows` at `params.peak_rate` over `params.partitions` partitions."""
    if not rows:
        raise ValueError("the key sample is empty")
    org_rates = _org_rates(rows, params.peak_rate)
    hot_threshold = min(SKEW_THRESHOLD * params.peak_rate / params.partitions, params.consumer_capacity)
    hot_orgs = tuple(sorted(
        (OrgLoad(org, rate, rate / params.peak_rate) for org, rate in org_rates.items() if rate > hot_threshold),
        key=lambda org: -org.rate,
    ))
    hot = frozenset(org.org_id for org in hot_orgs)
    loads = tuple(_load(strategy, rows, params, hot) for strategy in KEY_STRATEGIES)
    reference = next(load for load in loads if load.strategy == REFERENCE_STRATEGY)
    return SkewReport(
        params=params,
        sample_rows=len(rows),
        strategies=loads,
        hot_orgs=hot_orgs,
        recommendations=tuple(_recommend(hot_orgs, params)),
        recommended_partitions=required_partitions(
            params.peak_rate, params.consumer_capacity, skew_headroom(reference.skew)
        ),
    )

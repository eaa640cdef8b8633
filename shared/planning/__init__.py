"""Capacity planning: partition sizing and the key-skew simulator behind `rekey plan`."""

from kafka_rekey.shared.planning.samples import SampleRow, parse_sample, rows_from_keys
from kafka_rekey.shared.planning.sizing import required_partitions, skew_headroom
from kafka_rekey.shared.planning.skew import (
    OrgLoad,
    Recommendation,
    SimulationParams,
    SkewReport,
    StrategyLoad,
    simulate,
)

__all__ = [
    "OrgLoad",
    "Recommendation",
    "SampleRow",
    "SimulationParams",
    "SkewReport",
    "StrategyLoad",
    "parse_sample",
    "required_partitions",
    "rows_from_keys",
    "simulate",
    "skew_headroom",
]

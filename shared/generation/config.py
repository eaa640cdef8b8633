"""What traffic to generate: volume, tenant skew, fault rates, source format and seed."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_rekey.shared.translation import SourceFormat

GENERATED_FORMATS = (SourceFormat.CCAAS_JSON, SourceFormat.DEBEZIUM)

MAX_HOLD_BACK = 2_000
"""A late event is held back for up to this many records before it is sent."""


@dataclass(frozen=True)
class GenerationConfig:
    """`events` is the number of records sent in total (events, redeliveries, malformed records, tombstones).

    Tenant sizes follow Zipf(`zipf`) over `orgs` orgs; `hot_orgs` are named orgs that take the top ranks (1, 2,
    ...), the rest are `org-00001`, ... Each record slot is malformed with probability `malformed_rate`, a
    redelivery of a recent event with probability `duplicate_rate`; each event is held back (sent late and
    possibly after its successors) with probability `late_rate`.
    """

    events: int
    orgs: int
    zipf: float = 1.1
    hot_orgs: tuple[str, ...] = ()
    malformed_rate: float = 0.0
    duplicate_rate: float = 0.0
    late_rate: float = 0.02
    source_format: SourceFormat = SourceFormat.CCAAS_JSON
    seed: int = 0
    concurrency: int = 500
    """Interactions in progress at once (their events interleave)."""

    def __post_init__(self) -> None:
        if self.source_format not in GENERATED_FORMATS:
            known = ", ".join(GENERATED_FORMATS)
            raise ValueError(f"the generator writes source format {known}, not {self.source_format!r}")
        object.__setattr__(self, "source_format", SourceFormat(self.source_format))  # accept "debezium" too
        if self.events < 0:
            raise ValueError(f"events must be >= 0, got {self.events}")
        if self.orgs < 1:
            raise ValueError(f"orgs must be >= 1, got {self.orgs}")
        if self.zipf < 0:
            raise ValueError(f"zipf exponent must be >= 0 (0 = equal tenants), got {self.zipf}")
        if len(set(self.hot_orgs)) != len(self.hot_orgs) or any(not org.strip() for org in self.hot_orgs):
            raise ValueError(f"hot orgs must be distinct non-empty names, got {list(self.hot_orgs)}")
        if len(self.hot_orgs) > self.orgs:
            raise ValueError(f"{len(self.hot_orgs)} hot orgs given but only {self.orgs} orgs in total")
        for name in ("malformed_rate", "duplicate_rate", "late_rate"):
            rate = getattr(self, name)
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {rate}")
        if self.malformed_rate + self.duplicate_rate >= 1.0:
            raise ValueError(
                f"malformed_rate + duplicate_rate must be < 1 (got {self.malformed_rate + self.duplicate_rate}): "
                "some records must be events"
            )
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")

    def org_names(self) -> list[str]:
        """All orgs, heaviest first: the hot orgs, then generated names."""
        generated = (f"org-{i:05d}" for i in range(1, self.orgs + len(self.hot_orgs) + 1))
        rest = [name for name in generated if name not in self.hot_orgs]
        return [*self.hot_orgs, *rest][: self.orgs]

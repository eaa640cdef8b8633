"""A Zipf-skewed key sample with a fixed seed: org-000 is by far the hottest org."""

from __future__ import annotations

import numpy as np

from kafka_rekey.shared.planning import SampleRow


def zipf_rows(rows: int = 20_000, orgs: int = 200, exponent: float = 1.2, seed: int = 7) -> list[SampleRow]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, orgs + 1) ** exponent
    picks = rng.choice(orgs, size=rows, p=weights / weights.sum())
    return [SampleRow(f"org-{org:03d}", f"int-{i}") for i, org in enumerate(picks)]

"""`TopOrgs`: the per-org record counts of the ACL's translate stage reach `rekey_org_records` (the chart's skew
panel) for the top N orgs only, ranked at most once per `ORG_EXPORT_INTERVAL_S`."""

from __future__ import annotations

from prometheus_client import REGISTRY

from kafka_rekey.services.runtime import metrics
from kafka_rekey.services.runtime.metrics import TopOrgs


def _exported(org: str) -> float | None:
    return REGISTRY.get_sample_value("rekey_org_records", {"org": org})


def test_the_top_orgs_are_exported_and_ranked_again_once_due() -> None:
    now = 1_000.0
    orgs = TopOrgs(2)
    for org in ["top-a"] * 3 + ["top-b"] * 2 + ["top-c"]:
        orgs.add(org)
    orgs.export_due(now)
    assert (_exported("top-a"), _exported("top-b"), _exported("top-c")) == (3, 2, None)

    for _ in range(4):
        orgs.add("top-c")
    orgs.export_due(now)
    assert _exported("top-c") is None, "ranked again before the interval passed"
    now += metrics.ORG_EXPORT_INTERVAL_S
    orgs.export_due(now)
    assert (_exported("top-a"), _exported("top-b"), _exported("top-c")) == (3, None, 5)

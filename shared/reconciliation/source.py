"""What a source topic should have produced on one domain topic: translate, route, keep what lands there."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_rekey.shared.catalog import Catalog, SourceTopic
from kafka_rekey.shared.reconciliation.audit import AuditRecord, source_record
from kafka_rekey.shared.routing import route
from kafka_rekey.shared.translation import DomainEventDraft, SourceRecord, translate


def source_spec(catalog: Catalog, source_topic: str) -> SourceTopic:
    spec = catalog.topic(source_topic)
    if not isinstance(spec, SourceTopic):
        sources = ", ".join(s.name for s in catalog.sources)
        raise ValueError(f"{source_topic!r} is not a source topic of the catalog (sources: {sources})")
    return spec


def expected_on_domain(records: Iterable[SourceRecord], catalog: Catalog, source: SourceTopic,
                       domain_topic: str) -> list[AuditRecord]:
    """Audit records of the source records whose translation routes to `domain_topic` (skips and poison
    pills produce no domain event, so they are not expected there)."""
    expected = []
    for record in records:
        draft = translate(record, source.translation)
        if not isinstance(draft, DomainEventDraft):
            continue
        if any(route(catalog, family, draft.org_id, draft.interaction_id).topic == domain_topic
               for family in source.feeds):
            expected.append(source_record(draft.org_id, draft.interaction_id, draft.event_id, draft.event_time_ms))
    return expected

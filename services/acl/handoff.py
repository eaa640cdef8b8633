"""Start the live service where a backfill stopped: read the hand-off checkpoint topic once at start-up.

Sequences continue from the backfill's last value per key; source partitions the live consumer group has never
committed are committed at the backfill's snapshot end offsets, so the first live record is the first one the
backfill did not read: no gap, no duplicate at the seam. The ids of the CDC rows the backfill translated are
kept for the translate stage (`row_ids`), whose deletes carrying only the primary key may name them.
"""

from __future__ import annotations

import structlog
from confluent_kafka import Consumer, TopicPartition

from services.kafka.reading import iter_topic
from services.runtime.settings import RuntimeSettings
from shared.catalog import Catalog
from shared.handoff import Handoff
from shared.translation import RowIds

log = structlog.get_logger()


def read_checkpoint(config: dict[str, object], topic: str, row_ids: bool = True) -> Handoff:
    """Fold every record of the checkpoint topic, up to its end offsets at the time of the call (the CDC rows' ids
    only with `row_ids`)."""
    handoff = Handoff(keep_row_ids=row_ids)
    for message in iter_topic(dict(config), topic):
        handoff.apply(message.key(), message.value())
    return handoff


class HandoffSequences:
    def __init__(self, handoff: Handoff) -> None:
        self.handoff = handoff

    @classmethod
    def load(cls, catalog: Catalog, settings: RuntimeSettings, group_id: str,
             row_ids: bool = True) -> HandoffSequences:
        """`row_ids`: keep the CDC rows' ids (a process that translates a source that remembers rows)."""
        config = settings.kafka.librdkafka()
        handoff = read_checkpoint(config, catalog.checkpoint_topic, row_ids)
        if handoff.source_offsets:
            commit_start_offsets(config, group_id, handoff)
        log.info("handoff loaded", keys=len(handoff.last_sequences), partitions=len(handoff.source_offsets),
                 rows=len(handoff.row_ids))
        return cls(handoff)

    def last_sequence(self, sequence_key: str) -> int:
        return self.handoff.last_sequences.get(sequence_key, 0)

    @property
    def row_ids(self) -> dict[tuple[str, bytes], RowIds]:
        """(source topic, `shared.translation.row_key`) -> ids of every CDC row the backfill translated."""
        return self.handoff.row_ids


def commit_start_offsets(config: dict[str, object], group_id: str, handoff: Handoff) -> None:
    """Commit the snapshot offsets for partitions the group has no committed offset for yet."""
    consumer = Consumer({**config, "group.id": group_id, "enable.auto.commit": False})
    try:
        wanted = [TopicPartition(t, p) for t, p in handoff.source_offsets]
        committed = consumer.committed(wanted, timeout=30)
        fresh = [TopicPartition(tp.topic, tp.partition, handoff.source_offsets[(tp.topic, tp.partition)])
                 for tp in committed if tp.offset < 0]
        if fresh:
            consumer.commit(offsets=fresh, asynchronous=False)
            log.info("live service starts at the backfill snapshot", group=group_id, partitions=len(fresh))
    finally:
        consumer.close()

"""Start the live service where a backfill stopped: read the hand-off checkpoint topic once at start-up.

Sequences continue from the backfill's last value per key; source partitions the live consumer group has never
committed are committed at the backfill's snapshot end offsets, so the first live record is the first one the
backfill did not read: no gap, no duplicate at the seam.
"""

from __future__ import annotations

import structlog
from confluent_kafka import Consumer, TopicPartition

from services.kafka.reading import iter_topic
from services.runtime.settings import RuntimeSettings
from shared.catalog import Catalog
from shared.handoff import Handoff

log = structlog.get_logger()


def read_checkpoint(config: dict[str, object], topic: str) -> Handoff:
    """Fold every record of the checkpoint topic, up to its end offsets at the time of the call."""
    handoff = Handoff()
    for message in iter_topic(dict(config), topic):
        handoff.apply(message.key(), message.value())
    return handoff


class HandoffSequences:
    def __init__(self, handoff: Handoff) -> None:
        self.handoff = handoff

    @classmethod
    def load(cls, catalog: Catalog, settings: RuntimeSettings, group_id: str) -> HandoffSequences:
        config = settings.kafka.librdkafka()
        handoff = read_checkpoint(config, catalog.checkpoint_topic)
        if handoff.source_offsets:
            commit_start_offsets(config, group_id, handoff)
        log.info("handoff loaded", keys=len(handoff.last_sequences), partitions=len(handoff.source_offsets))
        return cls(handoff)

    def last_sequence(self, sequence_key: str) -> int:
        return self.handoff.last_sequences.get(sequence_key, 0)


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

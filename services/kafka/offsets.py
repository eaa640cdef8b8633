"""A consumer group's committed offsets, read through a consumer of that group that never joins it.

`AdminClient.list_consumer_group_offsets` crashes the whole process (librdkafka 2.16 and earlier,
confluentinc/librdkafka#5040: a NULL group handle in `rd_kafka_cgrp_op`) when the group coordinator answers
with a request-level error such as NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, which is what it answers
while a broker restarts. A consumer's OffsetFetch goes through its own group handle, which retries instead.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafka_rekey.services.kafka.transient import COORDINATOR_MOVING

NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID: the group has committed nothing on the partition


def committed_offsets(config: dict[str, Any], group: str, partitions: Iterable[tuple[str, int]],
                      timeout: float = 20.0) -> dict[tuple[str, int], int]:
    """The committed offset of `group` on each of `partitions` (`NO_OFFSET` where it has none); asked again while
    the group's coordinator moves, for up to `timeout` seconds."""
    wanted = [TopicPartition(topic, partition) for topic, partition in partitions]
    if not wanted:
        return {}
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                answer = consumer.committed(wanted, timeout=max(1.0, deadline - time.monotonic()))
                break
            except KafkaException as error:
                if error.args[0].code() not in COORDINATOR_MOVING or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # the coordinator is being elected or is loading the group's offsets
    finally:
        consumer.close()
    failed = [tp for tp in answer if tp.error is not None]
    if failed:
        raise KafkaException(failed[0].error)
    return {(tp.topic, tp.partition): tp.offset for tp in answer}

"""Is the Kafka cluster there? One metadata request before a command starts, failing with the root cause.

librdkafka retries an unreachable broker for ever and reports each attempt as a log line; a command that starts
its clients against a wrong address prints hundreds of them and ends in a bare timeout. `require_kafka` asks
once, keeps what librdkafka's error callback said (refused, does not resolve, TLS, authentication) and raises
`KafkaUnreachable` naming the address and that cause.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.kafka.errors import KafkaUnreachable

_QUIET = logging.getLogger("rekey.kafka.probe")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False  # the probe's connection attempts are summed up in its one error


def require_kafka(config: dict[str, Any], timeout: float = 10.0) -> None:
    causes: list[KafkaError] = []
    with AdminClient({**config, "error_cb": causes.append, "logger": _QUIET}) as admin:
        try:
            admin.list_topics(timeout=timeout)
        except KafkaException as error:
            admin.poll(0)  # serves the error callbacks queued meanwhile
            failure = error
        else:
            return
    raise KafkaUnreachable(_describe(config.get("bootstrap.servers", "?"), causes, failure)) from None


def _describe(bootstrap: str, causes: list[KafkaError], error: KafkaException) -> str:
    # The first specific cause is the useful one: later ones repeat it as "all brokers are down".
    specific = [c for c in causes if c.code() != KafkaError._ALL_BROKERS_DOWN]
    cause = (specific or causes or [error.args[0]])[0]
    reason = cause.str() if isinstance(cause, KafkaError) else str(cause)
    return f"Kafka at {bootstrap} is unreachable: {reason}"

"""The logger librdkafka writes through in the command-line tools (`KafkaSettings.librdkafka` hands it to every
client once `route_client_logs(True)` was called): silent unless asked (`rekey -v ...`, `show_librdkafka_logs`).

The long-running services do not route: confluent-kafka calls a Python logger from librdkafka's own threads
while a client is being created, and a service re-creates its transactional producer during broker outages,
where such a call can wait for the interpreter lock held by the thread creating the client. There librdkafka
writes its lines to stderr itself. Standard library only, so that reading the settings stays quick.
"""

from __future__ import annotations

import logging
import sys

LIBRDKAFKA_LOGGER = logging.getLogger("rekey.librdkafka")
LIBRDKAFKA_LOGGER.addHandler(logging.NullHandler())
LIBRDKAFKA_LOGGER.propagate = False
_routing = [False]


def route_client_logs(enabled: bool) -> None:
    """Whether the Kafka clients made from now on log through `LIBRDKAFKA_LOGGER`."""
    _routing[0] = enabled


def client_log_config() -> dict[str, logging.Logger]:
    """The librdkafka `logger` property when routing is on, else nothing (librdkafka prints to stderr)."""
    return {"logger": LIBRDKAFKA_LOGGER} if _routing[0] else {}


def show_librdkafka_logs(level: int) -> logging.Handler:
    """Print librdkafka's log lines at `level` and above to stderr, as they are; return the handler that does it,
    for `hide_librdkafka_logs`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s librdkafka %(message)s"))
    LIBRDKAFKA_LOGGER.addHandler(handler)
    LIBRDKAFKA_LOGGER.setLevel(level)
    return handler


def hide_librdkafka_logs(handler: logging.Handler) -> None:
    """Undo `show_librdkafka_logs`."""
    LIBRDKAFKA_LOGGER.removeHandler(handler)
    LIBRDKAFKA_LOGGER.setLevel(logging.NOTSET)

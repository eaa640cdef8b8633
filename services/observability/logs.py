"""Log set-up: structlog JSON lines carrying the service name (plus topic/partition/offset/key where bound), and
librdkafka's own log lines (`librdkafka.LIBRDKAFKA_LOGGER`) rendered the same way at the service's log level.
"""

from __future__ import annotations

import logging
import sys

import structlog

from kafka_rekey.services.observability.librdkafka import LIBRDKAFKA_LOGGER


def configure_logging(service: str, level: str = "INFO", fmt: str = "json") -> structlog.stdlib.BoundLogger:
    """Configure structlog and the standard library's logging once per process; return a logger bound to `service`.

    Call sites bind `topic`, `partition`, `offset` and `key` (e.g. `log.bind(topic=..., partition=...)`)
    so every line about a record says which record. Standard-library records (librdkafka's among them) are
    rendered the same way, with the logger's name.
    """
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer()
    )
    stamped: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*stamped, structlog.stdlib.add_logger_name, _bind_service(service)],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    ))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(getattr(logging, level))
    LIBRDKAFKA_LOGGER.propagate = True
    structlog.configure(
        processors=[*stamped, structlog.processors.StackInfoRenderer(), structlog.processors.format_exc_info,
                    renderer],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    logger: structlog.stdlib.BoundLogger = structlog.get_logger().bind(service=service)
    return logger


def _bind_service(service: str) -> structlog.types.Processor:
    def bind(_logger: object, _method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
        event.setdefault("service", service)
        return event

    return bind

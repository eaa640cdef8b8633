"""structlog set-up: JSON lines carrying the service name, plus topic/partition/offset/key where bound."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(service: str, level: str = "INFO", fmt: str = "json") -> structlog.stdlib.BoundLogger:
    """Configure structlog once per process and return a logger bound to `service`.

    Call sites bind `topic`, `partition`, `offset` and `key` (e.g. `log.bind(topic=..., partition=...)`)
    so every line about a record says which record.
    """
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=getattr(logging, level))
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    logger: structlog.stdlib.BoundLogger = structlog.get_logger().bind(service=service)
    return logger

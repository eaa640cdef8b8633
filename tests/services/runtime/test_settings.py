"""The runtime's settings turned into librdkafka configuration: what the transactional producer is given."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kafka_rekey.services.runtime.settings import RuntimeSettings


def test_transactional_producer_retries_refused_transaction_requests_after_the_configured_backoff() -> None:
    settings = RuntimeSettings(processing_guarantee="exactly_once", transaction_retry_backoff_ms=15,
                               transaction_retry_backoff_max_ms=150)

    config = settings.producer_config("rekey-worker-1")

    assert config["retry.backoff.ms"] == 15
    assert config["retry.backoff.max.ms"] == 150


def test_non_transactional_producer_keeps_librdkafka_retry_backoff() -> None:
    config = RuntimeSettings(processing_guarantee="at_least_once").producer_config(None)

    assert "retry.backoff.ms" not in config
    assert "retry.backoff.max.ms" not in config


def test_backoff_maximum_below_the_first_backoff_is_refused_naming_both_settings() -> None:
    with pytest.raises(ValidationError, match="REKEY_TRANSACTION_RETRY_BACKOFF_MAX_MS \\(20\\) is below "
                                              "REKEY_TRANSACTION_RETRY_BACKOFF_MS \\(50\\)"):
        RuntimeSettings(transaction_retry_backoff_ms=50, transaction_retry_backoff_max_ms=20)

"""Key strategies: how an output record's Kafka key is built from its org and interaction ids."""

from kafka_rekey.shared.keys.strategies import (
    BASE_STRATEGIES,
    KEY_SEPARATOR,
    KEY_STRATEGIES,
    ORDERING_GUARANTEES,
    BaseKeyStrategy,
    KeyStrategy,
    base_key,
    salt_bucket,
    salted_key,
)
from kafka_rekey.shared.keys.synthetic import synthetic_keys

__all__ = [
    "BASE_STRATEGIES",
    "KEY_SEPARATOR",
    "KEY_STRATEGIES",
    "ORDERING_GUARANTEES",
    "BaseKeyStrategy",
    "KeyStrategy",
    "base_key",
    "salt_bucket",
    "salted_key",
    "synthetic_keys",
]

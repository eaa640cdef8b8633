"""Java-parity partitioning: Kafka's murmur2, `toPositive` and the default partitioner's key -> partition map."""

from kafka_rekey.shared.partitioning.murmur2 import key_partition, murmur2, partition_for, to_positive
from kafka_rekey.shared.partitioning.remap import moved_keys

__all__ = ["key_partition", "moved_keys", "murmur2", "partition_for", "to_positive"]

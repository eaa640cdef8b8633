"""Replaying one org: which partitions of a family can hold it, which records are its, and their order."""

from kafka_rekey.shared.replay.scope import ReplayScope, org_scope
from kafka_rekey.shared.replay.selection import in_sequence_order, is_org_key, sequence_of

__all__ = ["ReplayScope", "in_sequence_order", "is_org_key", "org_scope", "sequence_of"]

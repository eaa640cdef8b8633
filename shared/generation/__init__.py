"""Seeded, deterministic source-traffic generation (no I/O): what `rekey generate` sends, and its manifest."""

from kafka_rekey.shared.generation.config import GenerationConfig
from kafka_rekey.shared.generation.records import PlannedRecord, RecordKind
from kafka_rekey.shared.generation.traffic import generate

__all__ = ["GenerationConfig", "PlannedRecord", "RecordKind", "generate"]

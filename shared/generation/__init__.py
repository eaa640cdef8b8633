"""Seeded, deterministic source-traffic generation (no I/O): what `rekey generate` sends, and its manifest."""

from shared.generation.config import GenerationConfig
from shared.generation.records import PlannedRecord, RecordKind
from shared.generation.traffic import generate

__all__ = ["GenerationConfig", "PlannedRecord", "RecordKind", "generate"]

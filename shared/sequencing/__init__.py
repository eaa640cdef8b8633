"""Dense per-key sequence numbers and the duplicate rules that keep them dense, shared by live and backfill."""

from kafka_rekey.shared.sequencing.decisions import Decision, Duplicate, Fresh, Redelivered, SeenEntry, decide
from kafka_rekey.shared.sequencing.ordering import SourcePosition, assign_sequences, source_order
from kafka_rekey.shared.sequencing.step import Step, sequence_step

__all__ = [
    "Decision",
    "Duplicate",
    "Fresh",
    "Redelivered",
    "SeenEntry",
    "SourcePosition",
    "Step",
    "assign_sequences",
    "decide",
    "sequence_step",
    "source_order",
]

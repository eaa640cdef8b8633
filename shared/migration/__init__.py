"""Moving a consumer group between a source topic and the family re-keyed from it, by source position: pure rules.

A domain record carries the source position it came from (its `src` header); a group's committed offsets on the
source say which positions it consumed. From the two, `positions` says whether a record was already consumed,
`moves` finds the start offsets on the family's partitions and what the group sees again, `rollback` the way back,
and `readiness` whether the family has caught up with the group.
"""

from kafka_rekey.shared.migration.moves import MovePlan, TargetScan, plan_move
from kafka_rekey.shared.migration.positions import Boundary, Consumed, boundary_from_json, boundary_to_json, covers
from kafka_rekey.shared.migration.readiness import Readiness, SourceFacts, readiness
from kafka_rekey.shared.migration.rollback import RollbackPlan, plan_rollback

__all__ = [
    "Boundary",
    "Consumed",
    "MovePlan",
    "Readiness",
    "RollbackPlan",
    "SourceFacts",
    "TargetScan",
    "boundary_from_json",
    "boundary_to_json",
    "covers",
    "plan_move",
    "plan_rollback",
    "readiness",
]

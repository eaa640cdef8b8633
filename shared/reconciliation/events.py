"""`ReconciliationRequired` (shared/schemas/reconciliation_required.avsc): one record per mismatching window."""

from __future__ import annotations

import hashlib
from typing import Any

from kafka_rekey.shared.reconciliation.audit import Mismatch

SCHEMA_NAME = "reconciliation_required"


def request_id(mismatch: Mismatch) -> str:
    """Stable id of a finding: consumers dedupe repeated reports of the same disagreement by it."""
    parts = (mismatch.check, mismatch.org_id, mismatch.window_start, mismatch.window_end,
             mismatch.left.checksum, mismatch.left.count, mismatch.right.checksum, mismatch.right.count)
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()


def reconciliation_required(mismatch: Mismatch, detected_at: int, repaired: bool) -> dict[str, Any]:
    """The record to publish; times are epoch milliseconds (UTC)."""
    return {
        "request_id": request_id(mismatch),
        "check": mismatch.check,
        "org_id": mismatch.org_id,
        "window_start": mismatch.window_start,
        "window_end": mismatch.window_end,
        "sides": [
            {"name": side.name, "count": side.count, "checksum": side.checksum}
            for side in (mismatch.left, mismatch.right)
        ],
        "detected_at": detected_at,
        "repaired": repaired,
    }


def record_key(mismatch: Mismatch) -> bytes:
    """Keyed by org, so one org's reconciliation requests stay in order."""
    return mismatch.org_id.encode()

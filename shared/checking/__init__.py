"""Verify what a run wrote against what was sent: nothing lost, order kept, parity, duplicates, dead letters."""

from kafka_rekey.shared.checking.report import CheckReport, OutputRecord, check_outputs

__all__ = ["CheckReport", "OutputRecord", "check_outputs"]

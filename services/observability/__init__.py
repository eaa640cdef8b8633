"""Logs, metrics and health endpoints shared by rekey's services."""

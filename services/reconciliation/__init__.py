"""Reconciliation: audit source topic, domain topic and sink table per org and window; rewind to repair."""

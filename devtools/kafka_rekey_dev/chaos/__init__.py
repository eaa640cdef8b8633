"""Fault injection: scenarios, harness and figures for `rekey chaos` and tests/chaos."""

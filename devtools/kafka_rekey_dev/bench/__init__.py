"""Benchmarks run by `rekey bench` on the embedded stack (not timed tests)."""

"""Spark jobs: each is extract -> pure transform -> load."""

"""rekey's deployed side: the live services (ACL, projection, sink, reconciler), their runtime and the CLI."""

DISTRIBUTION = "kafka-rekey"
"""The distribution this package is installed as (its version is `importlib.metadata.version(DISTRIBUTION)`)."""

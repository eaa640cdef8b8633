"""Real infrastructure started by rekey's own tooling for the demo and the tests (Kafka, PostgreSQL, registry)."""

"""Development tooling, not deployed: the embedded stack (Kafka, registry, PostgreSQL), chaos, bench, demo."""

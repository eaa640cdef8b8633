"""The Confluent-API-compatible schema registry: an HTTP client and the Avro serde built on it."""

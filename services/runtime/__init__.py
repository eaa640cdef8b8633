"""rekey's batch stream runtime on confluent-kafka: consume a batch, process it with pure `shared` functions,
produce with one librdkafka producer, checkpoint state and offsets together (at-least-once or exactly-once)."""

"""Writing generated source traffic to Kafka (the Kafka side of `rekey generate`)."""

from kafka_rekey.services.generation.writer import GenerationError, GenerationSummary, generate_to_topic

__all__ = ["GenerationError", "GenerationSummary", "generate_to_topic"]

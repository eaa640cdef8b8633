"""Kafka client adapters: the one producer factory, topic administration and key sampling."""

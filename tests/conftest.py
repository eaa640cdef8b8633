"""Session-wide fixtures: one real Kafka broker per session, a unique topic per test (see tests/fixtures)."""

pytest_plugins = [
    "tests.fixtures.kafka",
    "tests.fixtures.catalog",
    "tests.fixtures.postgres",
    "tests.fixtures.registry",
    "tests.fixtures.connect",
    "tests.fixtures.spark",
    "tests.fixtures.spark_cluster",
]

"""Where the embedded stack lives by default (ports and data directories), apart from the code that runs it, so
that the CLI can show them in its help without loading that code."""

from __future__ import annotations

from kafka_rekey_dev.embedded.maven import REPO_ROOT

KAFKA_DATA_DIR = REPO_ROOT / "var" / "kafka"
KAFKA_BASE_PORT = 9092
POSTGRES_DATA_DIR = REPO_ROOT / "var" / "postgres"
POSTGRES_PORT = 55432
POSTGRES_OS_USER = "postgres"
REGISTRY_DATA_DIR = REPO_ROOT / "var" / "registry"
REGISTRY_PORT = 8081
CONNECT_DATA_DIR = REPO_ROOT / "var" / "connect"
CONNECT_PORT = 8083
SPARK_DATA_DIR = REPO_ROOT / "var" / "spark"
SPARK_PORT = 7077
SPARK_UI_PORT = 8080

"""The topic catalog: models, the YAML parser with file/topic/field errors, drift and Markdown docs."""

from kafka_rekey.shared.catalog.docs import render_markdown
from kafka_rekey.shared.catalog.drift import Drift, ObservedTopic, topic_drift
from kafka_rekey.shared.catalog.errors import CatalogError, Problem
from kafka_rekey.shared.catalog.models import (
    Catalog,
    Family,
    OwnedTopic,
    SourceTopic,
    TopicKey,
    TopicSpec,
)
from kafka_rekey.shared.catalog.parsing import parse_catalog
from kafka_rekey.shared.catalog.tables import FamilyTable, TopicTarget

__all__ = [
    "Catalog",
    "CatalogError",
    "Drift",
    "Family",
    "FamilyTable",
    "ObservedTopic",
    "OwnedTopic",
    "Problem",
    "SourceTopic",
    "TopicKey",
    "TopicSpec",
    "TopicTarget",
    "parse_catalog",
    "render_markdown",
    "topic_drift",
]

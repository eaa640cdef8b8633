"""The topic catalog: models, the YAML parser with file/topic/field errors, drift and Markdown docs."""

from shared.catalog.docs import render_markdown
from shared.catalog.drift import Drift, ObservedTopic, topic_drift
from shared.catalog.errors import CatalogError, Problem
from shared.catalog.models import (
    Catalog,
    Family,
    OwnedTopic,
    SourceTopic,
    TopicKey,
    TopicSpec,
)
from shared.catalog.parsing import parse_catalog
from shared.catalog.tables import FamilyTable, TopicTarget

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

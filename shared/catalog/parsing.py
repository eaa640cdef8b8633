"""Parse catalog YAML text into a checked `Catalog` (pure: the caller reads the file)."""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from kafka_rekey.shared.catalog.errors import CatalogError, Problem
from kafka_rekey.shared.catalog.models import Catalog, TopicDefaults
from kafka_rekey.shared.catalog.validation import check_catalog

_SECTIONS = {"topics": "topic", "sources": "source", "families": "family"}
_TOPIC_SECTIONS = ("topics", "sources")


def parse_catalog(text: str, source: str) -> Catalog:
    """The catalog in `text`; `source` (usually the file name) prefixes every error message.

    `defaults` are merged into every topic and source before validation. Raises `CatalogError` listing every
    problem, e.g. `catalog/topics.yaml: topic 'interaction_events_low_v2': partitions: must be >= 1`.
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CatalogError(source, [Problem("", "", f"not valid YAML: {error}")]) from error
    if not isinstance(data, dict):
        raise CatalogError(source, [Problem("", "", "must be a YAML mapping with version, families, topics, ...")])
    try:
        defaults = TopicDefaults.model_validate(data.get("defaults") or {})
    except ValidationError as error:
        raise CatalogError(source, [_problem(e, {}, prefix="defaults") for e in error.errors()]) from error
    try:
        catalog = Catalog.model_validate(_with_defaults(data, defaults))
    except ValidationError as error:
        raise CatalogError(source, [_problem(e, data) for e in error.errors()]) from error
    problems = check_catalog(catalog)
    if problems:
        raise CatalogError(source, problems)
    return catalog


def _with_defaults(data: dict[str, Any], defaults: TopicDefaults) -> dict[str, Any]:
    fill = defaults.model_dump(exclude_none=True)
    merged = dict(data)
    for section in _TOPIC_SECTIONS:
        entries = data.get(section)
        if isinstance(entries, list):
            merged[section] = [{**fill, **entry} if isinstance(entry, dict) else entry for entry in entries]
    return merged


def _problem(error: ErrorDetails, data: dict[str, Any], prefix: str = "") -> Problem:
    loc = list(error["loc"])
    where = ""
    if len(loc) >= 2 and loc[0] in _SECTIONS:
        kind, index = _SECTIONS[str(loc[0])], loc[1]
        entries = data.get(str(loc[0]))
        if isinstance(index, str):  # families are a mapping keyed by name
            where = f"{kind} {index!r}"
        else:
            entry = entries[index] if isinstance(entries, list) and index < len(entries) else None
            name = entry.get("name") if isinstance(entry, dict) else None
            where = f"{kind} {name!r}" if name else f"{kind} #{index + 1}"
        loc = loc[2:]
    field = ".".join(str(part) for part in ([prefix] if prefix else []) + loc)
    return Problem(where, field, _message(error))


def _message(error: ErrorDetails) -> str:
    kind, context = error["type"], error.get("ctx") or {}
    if kind == "greater_than_equal":
        return f"must be >= {context['ge']}, got {error['input']!r}"
    if kind == "missing":
        return "required"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":  # our own validators' messages, without pydantic's "Value error, " prefix
        return str(context.get("error", error["msg"]))
    message = error["msg"]
    if message.startswith("Input should be "):
        return f"must be {message.removeprefix('Input should be ')}, got {error['input']!r}"
    return message[:1].lower() + message[1:]

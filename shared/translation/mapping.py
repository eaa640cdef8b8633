"""Source mappings: where a source's records keep the org id, interaction id, event id, event type, event time,
interaction type and payload. A preset (`shared.translation.presets`) or the catalog declares one; it is
compiled once into a `MappedTranslator`.

Each field is read from the first of its sources that has a value (a list is a list of fallbacks, in order):

- `path`: a dotted path into the JSON value (`detail.eventBody.conversationId`; a step may hold `-`, as in
  `detail-type`; a number indexes a list);
- `key: true`: the record key, as UTF-8 text;
- `header`: a record header, as UTF-8 text;
- `record_timestamp: true`: the Kafka record's timestamp (epoch milliseconds), for `event_time`;
- `topic: true`: the record's topic name (cut to a segment: `tenant_a.crm.interactions`);
- `constant`: a fixed value (a feed that belongs to one org);
- `column`: a column of the captured row (`debezium` sources only: the image the change carries, or for a
  delete the row's earlier ids), where `path` reads the change event itself (`source.schema`, `source.db`).

A text value can be cut: `split` by a separator and take segment `segment` (0-based, negative from the end), or
take the first group of the regular expression `pattern` (searched, compiled once); a value without the separator
or the match is not of the declared shape, so the next fallback is tried. `lowercase` folds it, and
`ids: template` replaces every UUID-shaped dot-separated step by `{id}` (a notification topic name as event
type). `event_time` takes each source's `encoding` (`shared.translation.timestamps.TimeEncoding`).

`only` lists conditions a record must meet to be about an interaction, `skip` conditions that make it a counted
skip with its reason (a heartbeat): neither is a poison pill.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from kafka_rekey.shared.sequencing import SourcePosition
from kafka_rekey.shared.translation.avro_values import AvroValues, is_framed, value_object
from kafka_rekey.shared.translation.fields import canonical_json, fail, json_object, text
from kafka_rekey.shared.translation.outcomes import DomainEventDraft, Outcome, PoisonReason, Skip, SkipReason
from kafka_rekey.shared.translation.source import SourceRecord
from kafka_rekey.shared.translation.timestamps import TimeEncoding, epoch_millis

# A UUID step of a dotted name, after a dot (`template` puts one in front): a literal replacement is several
# times faster than a lookbehind or a group reference in the replacement.
_UUID_STEP = re.compile(r"\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?=\.|$)")
_CUT_CACHE = 4096
"""Distinct values whose cut (`split`/`pattern`) or template a field source remembers: an org's envelope `source`
repeats, and a conversation's events share their topic."""
# Looked up once: an enum member read from its class costs a dictionary walk per record.
_MISSING_ORG_ID, _MISSING_INTERACTION_ID, _MISSING_EVENT_ID, _SCHEMA_INVALID = (
    PoisonReason.MISSING_ORG_ID, PoisonReason.MISSING_INTERACTION_ID, PoisonReason.MISSING_EVENT_ID,
    PoisonReason.SCHEMA_INVALID)
MAPPED_FIELDS = ("org_id", "interaction_id", "event_id", "event_type", "event_time", "interaction_type")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldSource(_Strict):
    """Where one field's value is: exactly one of `path`, `key`, `header`, `record_timestamp`, `topic`, `constant`,
    `column`."""

    path: str | None = None
    key: bool = False
    header: str | None = None
    record_timestamp: bool = False
    topic: bool = False
    constant: str | None = None
    column: str | None = Field(default=None, min_length=1)
    split: str | None = Field(default=None, min_length=1)
    segment: int = -1
    pattern: str | None = None
    lowercase: bool = False
    ids: Literal["keep", "template"] = "keep"
    encoding: TimeEncoding = TimeEncoding.AUTO

    @model_validator(mode="after")
    def _one_origin(self) -> FieldSource:
        given = [name for name, set_ in (("path", self.path is not None), ("key", self.key),
                                         ("header", self.header is not None),
                                         ("record_timestamp", self.record_timestamp), ("topic", self.topic),
                                         ("constant", self.constant is not None),
                                         ("column", self.column is not None)) if set_]
        if len(given) != 1:
            raise ValueError(f"give exactly one of path, key, header, record_timestamp, topic, constant, column "
                             f"(got {', '.join(given) or 'none'})")
        if self.path is not None and (not self.path or any(not step for step in self.path.split("."))):
            raise ValueError(f"path {self.path!r} has an empty step")
        if self.constant is not None and not self.constant.strip():
            raise ValueError("constant is blank")
        if self.split is not None and self.pattern is not None:
            raise ValueError("give split or pattern, not both")
        if self.pattern is not None:
            try:
                compiled = re.compile(self.pattern)
            except re.error as error:
                raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {error}") from None
            if compiled.groups != 1:
                raise ValueError(f"pattern {self.pattern!r} must have exactly one group (the value)")
        return self

    @property
    def label(self) -> str:
        if self.path is not None:
            return self.path
        if self.key:
            return "record key"
        if self.header is not None:
            return f"header {self.header}"
        if self.column is not None:
            return f"column {self.column}"
        if self.topic:
            return "topic"
        return "record timestamp" if self.record_timestamp else "constant"


Sources = tuple[FieldSource, ...]


class Condition(_Strict):
    """A test of the text at `path`: `equals` one of the values, or starts with one of the `prefixes`."""

    path: str
    equals: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    reason: SkipReason = SkipReason.NOT_AN_INTERACTION
    """For `skip`: the reason the skip is counted under."""

    @model_validator(mode="after")
    def _one_test(self) -> Condition:
        if bool(self.equals) == bool(self.prefixes):
            raise ValueError("give either equals or prefixes")
        return self

    def test(self) -> Callable[[dict[str, Any]], bool]:
        """The condition, compiled: document -> whether it holds."""
        read, equals, prefixes = _path_reader(tuple(self.path.split("."))), frozenset(self.equals), self.prefixes

        def holds(document: dict[str, Any]) -> bool:
            value = read(document, None)
            return isinstance(value, str) and (value in equals if equals else value.startswith(prefixes))

        return holds

    def found(self, document: dict[str, Any]) -> str:
        """What the record holds at `path`, for a message."""
        return str(_lookup(document, tuple(self.path.split("."))))[:96]


class SourceMapping(_Strict):
    """A complete mapping: every required field has at least one source."""

    org_id: Sources = Field(min_length=1)
    interaction_id: Sources = Field(min_length=1)
    event_id: Sources = Field(min_length=1)
    event_type: Sources = Field(min_length=1)
    event_time: Sources = Field(min_length=1)
    interaction_type: Sources = ()
    payload: str | None = None
    """Dotted path of the object kept as the event's payload (absent: `{}`); none: the whole value."""
    only: tuple[Condition, ...] = ()
    skip: tuple[Condition, ...] = ()
    _hash: int | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _no_columns(self) -> SourceMapping:
        for name in MAPPED_FIELDS:
            if any(source.column is not None for source in getattr(self, name)):
                raise ValueError(f"{name}: column is for format debezium (a captured row); use path here")
        return self

    def __hash__(self) -> int:
        # Computed once: a translator is looked up by its mapping for every record.
        if self._hash is None:
            self._hash = hash(self.model_dump_json())
        return self._hash


class MappingOverrides(_Strict):
    """A catalog source's `mapping`: a whole mapping, or the fields that replace its preset's."""

    org_id: Sources | None = None
    interaction_id: Sources | None = None
    event_id: Sources | None = None
    event_type: Sources | None = None
    event_time: Sources | None = None
    interaction_type: Sources | None = None
    payload: str | None = None
    only: tuple[Condition, ...] | None = None
    skip: tuple[Condition, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _single_sources_as_lists(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {name: [value] if name in MAPPED_FIELDS and isinstance(value, dict) else value
                    for name, value in data.items()}
        return data

    def over(self, preset: MappingOverrides | None = None) -> SourceMapping:
        """This declaration over `preset`'s; raises ValueError naming the fields still without a source."""
        merged = {**(preset.model_dump(exclude_none=True) if preset is not None else {}),
                  **self.model_dump(exclude_none=True)}
        missing = [name for name in MAPPED_FIELDS[:5] if not merged.get(name)]
        if missing:
            raise ValueError(f"no source for {', '.join(missing)}")
        return SourceMapping.model_validate(merged)


def _lookup(document: Any, steps: tuple[str, ...]) -> Any:
    node = document
    for step in steps:
        if node.__class__ is dict:
            node = node.get(step)
        elif isinstance(node, list) and step.lstrip("-").isdigit() and -len(node) <= int(step) < len(node):
            node = node[int(step)]
        else:
            return None
    return node


Reader = Callable[[dict[str, Any], SourceRecord], Any]


def _reader(source: FieldSource) -> Reader:
    """A function (document, record) -> the raw value of `source` (None: absent)."""
    if source.path is not None:
        return _path_reader(tuple(source.path.split(".")))
    if source.key:
        return lambda _document, record: _utf8(record.key)
    if source.header is not None:
        name = source.header
        return lambda _document, record: _utf8(record.headers.get(name))
    if source.record_timestamp:
        return lambda _document, record: record.timestamp_ms
    if source.topic:
        return lambda _document, record: record.topic
    if source.column is not None:
        raise ValueError(f"column {source.column!r}: a captured row's column is read by the Debezium translator")
    constant = source.constant
    return lambda _document, _record: constant


def _path_reader(steps: tuple[str, ...]) -> Callable[[dict[str, Any], object], Any]:
    """`_lookup` of `steps`, by plain indexing while every step is a key that is there (the common case)."""
    if len(steps) > 3:
        return lambda document, _record: _lookup(document, steps)
    first, second, third = (*steps, "", "")[:3]
    depth = len(steps)

    def read(document: dict[str, Any], _record: object) -> Any:
        try:
            if depth == 1:
                return document[first]
            if depth == 2:
                return document[first][second]
            return document[first][second][third]
        except (KeyError, TypeError, IndexError):  # absent, or a list or scalar on the way: the general walk
            return _lookup(document, steps)

    return read


def _utf8(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


class _Source:
    """One field source, compiled: its reader and what is done to its value."""

    __slots__ = ("as_is", "cut", "cut_value", "encoding", "label", "lowercase", "pattern", "read", "segment",
                 "split", "template", "templated")

    def __init__(self, source: FieldSource) -> None:
        self.read = _reader(source)
        self.label = source.label
        self.pattern = None if source.pattern is None else re.compile(source.pattern)
        self.split, self.segment = source.split, source.segment
        self.cut = self.pattern is not None or self.split is not None
        self.cut_value = lru_cache(maxsize=_CUT_CACHE)(self._cut_value)
        self.template, self.lowercase = source.ids == "template", source.lowercase
        self.as_is = not (self.template or self.lowercase)  # an ASCII string it reads is the value as it is
        self.templated = lru_cache(maxsize=_CUT_CACHE)(self._templated)  # a conversation's events repeat a topic
        self.encoding = source.encoding

    def _cut_value(self, value: str) -> str | None:
        if self.pattern is not None:
            match = self.pattern.search(value)
            found = None if match is None else match.group(1)
        else:
            parts = value.split(self.split)
            found = parts[self.segment] if len(parts) > 1 and -len(parts) <= self.segment < len(parts) else None
        return found if found and not found.isspace() else None

    def finish(self, value: Any) -> str:
        if value.__class__ is str and self.as_is and value.isascii():
            return value  # the common case at once: text Avro can carry, taken as it is
        if value.__class__ is int:
            return str(value)
        result = text(value, self.label)
        if self.template:
            result = self.templated(result)
        return result.lower() if self.lowercase else result

    @staticmethod
    def _templated(value: str) -> str:
        return _UUID_STEP.sub(".{id}", "." + value)[1:]


def _absent(value: Any) -> bool:
    return value is None or (value.__class__ is str and (not value or value.isspace()))


class CompiledField:
    """One field's fallbacks, compiled. When none has a value, the error names the last (the most general)."""

    def __init__(self, sources: Sources) -> None:
        self.sources = [_Source(source) for source in sources]
        self.label = " or ".join(source.label for source in sources)
        self.last = sources[-1].label if sources else ""
        # The first source when it is taken as it is: a string it holds is the value (the common case, at once).
        first = self.sources[0] if self.sources else None
        self.plain_first = first if first is not None and not first.cut else None

    def raw(self, document: dict[str, Any], record: SourceRecord) -> tuple[Any, _Source | None]:
        """The first present value and its source ((None, None): none has one)."""
        for source in self.sources:
            value = source.read(document, record)
            if value is None or (value.__class__ is str and (not value or value.isspace())):  # absent
                continue
            if not source.cut:
                return value, source
            if value.__class__ is not str:
                fail(PoisonReason.SCHEMA_INVALID, f"{source.label} is a {type(value).__name__}, expected a string",
                     source.label)
            cut = source.cut_value(value)
            if cut is not None:
                return cut, source
        return None, None

    def why(self, document: dict[str, Any], record: SourceRecord) -> str:
        """Why no source gave a value (called once that is known)."""
        for source in reversed(self.sources):
            value = source.read(document, record)
            if source.cut and value.__class__ is str and not _absent(value):
                shape = source.pattern.pattern if source.pattern is not None else source.split
                return f"{source.label} {value[:96]!r} is not of the declared shape ({shape!r})"
        return f"{self.label} is missing or empty"

    def text(self, document: dict[str, Any], record: SourceRecord, missing: PoisonReason) -> str:
        found = self.optional_text(document, record)
        if found is None:
            fail(missing, self.why(document, record), self.last)
        return found

    def optional_text(self, document: dict[str, Any], record: SourceRecord) -> str | None:
        # The first source's string at once (inlined: this runs for every field of every event).
        first = self.plain_first
        if first is not None:
            value = first.read(document, record)
            if value.__class__ is str and value and not value.isspace():
                return value if first.as_is and value.isascii() else first.finish(value)
        value, source = self.raw(document, record)
        return None if source is None else source.finish(value)

    def millis(self, document: dict[str, Any], record: SourceRecord) -> int:
        value, source = self.raw(document, record)
        if source is None:
            fail(PoisonReason.BAD_TIMESTAMP, self.why(document, record), self.last)
        return epoch_millis(value, source.label, source.encoding)


class MappedTranslator:
    """`translate` for one mapping: JSON object values; a null value (tombstone) is a counted skip."""

    def __init__(self, mapping: SourceMapping) -> None:
        self.mapping = mapping
        self.org_id = CompiledField(mapping.org_id)
        self.interaction_id = CompiledField(mapping.interaction_id)
        self.event_id = CompiledField(mapping.event_id)
        self.event_type = CompiledField(mapping.event_type)
        self.event_time = CompiledField(mapping.event_time)
        self.interaction_type = CompiledField(mapping.interaction_type)
        self.payload_read = None if mapping.payload is None else _path_reader(tuple(mapping.payload.split(".")))
        self.skip = [(condition, condition.test()) for condition in mapping.skip]
        self.only = [(condition, condition.test()) for condition in mapping.only]

    def __call__(self, record: SourceRecord, avro: AvroValues | None = None, _rows: object = None) -> Outcome:
        """`avro`: reads values in the Confluent wire format (without it they are poison pills); an event
        stream's translation remembers no rows (`_rows`, for the translators' common signature)."""
        if record.value is None:
            return Skip(SkipReason.TOMBSTONE, "null value on an event stream")
        value = record.value
        document = value_object(value, "event value", avro)[0] if is_framed(value) else \
            json_object(value, "event value")
        for condition, holds in self.skip:
            if holds(document):
                return Skip(condition.reason, f"{condition.path} is {condition.found(document)!r}")
        for condition, holds in self.only:
            if not holds(document):
                return Skip(condition.reason, f"{condition.path} {condition.found(document)!r} is not about an "
                                              f"interaction")
        event_id = self.event_id.text(document, record, _MISSING_EVENT_ID)
        event_time_ms = self.event_time.millis(document, record)
        return DomainEventDraft(
            org_id=self.org_id.text(document, record, _MISSING_ORG_ID),
            interaction_id=self.interaction_id.text(document, record, _MISSING_INTERACTION_ID),
            event_id=event_id,
            event_type=self.event_type.text(document, record, _SCHEMA_INVALID),
            interaction_type=self.interaction_type.optional_text(document, record),
            event_time_ms=event_time_ms,
            source=SourcePosition(record.topic, record.partition, record.offset),
            ordering_token=event_time_ms,
            change_op=None,
            payload=self._payload(document),
            dedupe_id=event_id,
        )

    def _payload(self, document: dict[str, Any]) -> str:
        if self.payload_read is None:
            return canonical_json(document, "value")
        value = self.payload_read(document, None)
        if value is None:
            value = {}
        if not isinstance(value, dict):
            fail(PoisonReason.SCHEMA_INVALID, f"{self.mapping.payload} is a {type(value).__name__}, expected an "
                                              f"object", self.mapping.payload)
        return canonical_json(value, self.mapping.payload or "value")

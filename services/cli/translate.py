"""`rekey translate`: a dry run of the anti-corruption layer for onboarding a source.

Every record of a file or a live topic goes through the very translation and routing the services use
(`shared.pipeline.RecordPipeline`), and comes out as one JSON line: an `event` with its ids, time and the topic,
key and partition of each family it feeds; a `skip` or a `poison` pill with its reason and field. The last line
counts the outcomes per reason. Exit 3 when any record is a poison pill.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption, CatalogOption, kafka_settings, open_catalog
from kafka_rekey.services.cli.errors import ExitCode, user_errors
from kafka_rekey.shared.source_formats import SourceFormat

if TYPE_CHECKING:
    from kafka_rekey.shared.pipeline import Processed
    from kafka_rekey.shared.translation import SourceRecord


def _file_records(path: Path, keyed: bool) -> Iterator[SourceRecord]:
    from kafka_rekey.shared.translation import SourceRecord

    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            key: bytes | None = None
            value: bytes | None = line.strip()
            if keyed:
                try:
                    document = json.loads(line)
                except ValueError as error:
                    raise ValueError(f"{path}:{number}: --keyed expects {{\"key\": ..., \"value\": ...}}: {error}") \
                        from None
                if not isinstance(document, dict) or "value" not in document:
                    raise ValueError(f"{path}:{number}: --keyed expects {{\"key\": ..., \"value\": ...}}")
                key = None if document.get("key") is None else str(document["key"]).encode()
                value = None if document["value"] is None else json.dumps(document["value"]).encode()
            elif value == b"null":
                value = None
            yield SourceRecord(path.name, 0, number, key, value)


def _topic_records(config: dict[str, Any], topic: str, limit: int) -> Iterator[SourceRecord]:
    from kafka_rekey.services.kafka.reading import iter_topic
    from kafka_rekey.shared.translation import SourceRecord

    for count, message in enumerate(iter_topic(config, topic, idle_timeout=10.0)):
        if count >= limit:
            return
        yield SourceRecord(topic, message.partition() or 0, message.offset() or 0, message.key(), message.value(),
                           dict(message.headers() or []))


def _line(record: SourceRecord, processed: Processed) -> dict[str, Any]:
    from kafka_rekey.shared.pipeline import DeadLetter, Routed

    where = {"topic": record.topic, "partition": record.partition, "offset": record.offset}
    if isinstance(processed, Routed):
        draft = processed.draft
        return {**where, "outcome": "event", "org_id": draft.org_id, "interaction_id": draft.interaction_id,
                "event_id": draft.event_id, "event_type": draft.event_type, "event_time_ms": draft.event_time_ms,
                "outputs": [{"topic": r.route.topic, "key": r.route.key, "partition": r.route.partition}
                            for r in processed.records]}
    if isinstance(processed, DeadLetter):
        pill = processed.pill
        return {**where, "outcome": "poison", "reason": str(pill.reason_code), "field": pill.field,
                "message": pill.message}
    return {**where, "outcome": "skip", "reason": str(processed.reason), "message": processed.message}


def translate(
    source_format: Annotated[SourceFormat | None, typer.Option(
        "--source-format", "--format",
        help="The source's format, as `generate` and `backfill` name it (`--format` is its alias): its events are "
             "routed in the catalog's default family.")] = None,
    source: Annotated[str | None, typer.Option(
        "--source", help="A source of the catalog: its format and the families it feeds.")] = None,
    file: Annotated[Path | None, typer.Option(
        "--file", help="JSON lines, one record value per line (`null`: a tombstone).")] = None,
    keyed: Annotated[bool, typer.Option(
        "--keyed", help="--file lines are {\"key\": ..., \"value\": ...}.")] = False,
    topic: Annotated[str | None, typer.Option("--topic", help="Read the records from this topic instead.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Records to read from --topic.")] = 100,
    catalog_path: CatalogOption = None,
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Translate and route records without writing anything: one JSON line per record (event, skip or poison
    with reason and field), then the counts. Exit 3 when any record is a poison pill."""
    with user_errors():
        if (source_format is None) == (source is None):
            raise ValueError("give exactly one of --source-format FORMAT or --source NAME")
        if (file is None) == (topic is None):
            raise ValueError("give exactly one of --file F.jsonl or --topic T")
        if file is not None and not file.is_file():
            raise FileNotFoundError(f"--file {file} not found")
        catalog = open_catalog(catalog_path)
        if source is not None:
            declared = next((s for s in catalog.sources if s.name == source), None)
            if declared is None:
                raise ValueError(f"--source {source!r} is not a source of the catalog "
                                 f"({', '.join(s.name for s in catalog.sources)})")
            chosen_format, families = declared.translation, declared.feeds
        else:
            chosen_format, families = SourceFormat(source_format), (catalog.default_family,)
        records = (_file_records(file, keyed) if file is not None
                   else _topic_records(kafka_settings(bootstrap_servers).librdkafka(), str(topic), limit))
        from kafka_rekey.services.registry.client import SchemaRegistryClient
        from kafka_rekey.services.settings import RegistrySettings
        from kafka_rekey.shared.pipeline import RecordPipeline, Routed
        from kafka_rekey.shared.translation import AvroValues, RememberedRows

        registry = SchemaRegistryClient(RegistrySettings())  # asked only for an Avro record's writer schema
        pipeline = RecordPipeline(catalog, "rekey-translate", "dry-run", encode=False,
                                  avro=AvroValues(registry.writer_schema_text))
        rows = RememberedRows()  # a delete carrying only the primary key takes the ids of the row's earlier changes
        process = pipeline.processor(chosen_format, families, rows)
        counts: Counter[tuple[str, str]] = Counter()
        poisoned = False
        for record in records:
            processed = process(record)
            if isinstance(processed, Routed):
                rows.learn(record, processed.draft)
            line = _line(record, processed)
            counts[(line["outcome"], line.get("reason", ""))] += 1
            poisoned |= line["outcome"] == "poison"
            typer.echo(json.dumps(line, sort_keys=True))
    summary: dict[str, Any] = {"event": counts[("event", "")], "skip": {}, "poison": {}}
    for (outcome, reason), count in sorted(counts.items()):
        if outcome != "event":
            summary[outcome][reason] = count
    typer.echo(json.dumps({"counts": summary}, sort_keys=True))
    if poisoned:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


def register(app: typer.Typer) -> None:
    app.command(name="translate")(translate)

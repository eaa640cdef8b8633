"""The backfill's transforms on actual rows: Spark sequencing equals `shared.sequencing.assign_sequences`,
translation and routing equal the shared functions, values equal whole-record Avro encoding."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from kafka_rekey.services.catalog_files import load_catalog
from kafka_rekey.shared.avro import encode_body, frame, load_schema, parse_schema
from kafka_rekey.shared.handoff import Handoff, sequence_key
from kafka_rekey.shared.routing import route
from kafka_rekey.shared.sequencing import SourcePosition, assign_sequences, source_order
from kafka_rekey.shared.translation import DomainEventDraft, SourceRecord, to_avro_record, translate
from kafka_rekey.spark_backfill import transform
from kafka_rekey.spark_backfill.extract import source_schema

pytestmark = pytest.mark.spark

CATALOG = Path(__file__).resolve().parents[2] / "catalog" / "topics.yaml"


def _rows(seed: int, count: int) -> list[dict[str, object]]:
    """Rows with many ordering-token ties, several source partitions/topics and repeated dedupe ids."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        key = f"org-{rng.randrange(3)}:i-{rng.randrange(12)}"
        rows.append({
            "out_topic": rng.choice(["a_v2", "b_v2"]),
            "out_key": key,
            "ordering_token": rng.randrange(20),  # many ties: partition, offset, topic decide
            "src_partition": rng.randrange(3),
            "src_offset": i // 3 + rng.randrange(2) * 1000,
            "src_topic": rng.choice(["src-a", "src-b"]),
            "dedupe_id": f"e-{rng.randrange(count // 2)}",  # ~half are upstream duplicates of another row
            "item": i,
        })
    return rows


def _expected(rows: list[dict[str, object]], start_after: dict[str, int] | None = None) -> set[tuple[str, int, int]]:
    keyed = [
        (sequence_key(str(r["out_topic"]), str(r["out_key"])),
         source_order(int(r["ordering_token"]),  # type: ignore[call-overload]
                      SourcePosition(str(r["src_topic"]), int(r["src_partition"]), int(r["src_offset"]))),  # type: ignore[call-overload]
         str(r["dedupe_id"]), int(r["item"]))  # type: ignore[call-overload]
        for r in rows
    ]
    return set(assign_sequences(keyed, start_after))


def _start_after(spark, start_after):  # type: ignore[no-untyped-def]
    if start_after is None:
        return None
    return spark.createDataFrame([{"out_topic": k.split("/", 1)[0], "out_key": k.split("/", 1)[1], "last": v}
                                  for k, v in start_after.items()])


def _spark_result(spark, rows, start_after=None):  # type: ignore[no-untyped-def]
    frame_ = spark.createDataFrame(rows)
    result = transform.sequence_events(frame_, _start_after(spark, start_after), partitions=3).collect()
    return {(sequence_key(r["out_topic"], r["out_key"]), r["sequence"], r["item"]) for r in result}


WRITE_SCHEMA = ("kind string, out_topic string, out_key string, dedupe_id string, reason string, out_partition int, "
                "head binary, tail binary, src string, dlq_key binary, dlq_value binary, "
                "dlq_headers array<struct<key: string, value: binary>>, ordering_token long, src_partition long, "
                "src_offset long, src_topic string")


def _numbered(spark, rows, start_after=None):  # type: ignore[no-untyped-def]
    """(kind, sequence key, sequence, item) of every row by the write step's numbering: `for_numbering` into 3
    partitions, then `number_sorted` over each (the item rides in `src`)."""
    full = [{**dict.fromkeys(("reason", "out_partition", "head", "tail", "dlq_key", "dlq_value", "dlq_headers")),
             "kind": "event", **r, "src": str(r["item"])} for r in rows]
    frame_ = spark.createDataFrame([{k: v for k, v in r.items() if k != "item"} for r in full], WRITE_SCHEMA)
    ordered = transform.for_numbering(frame_, 3, _start_after(spark, start_after))

    def run(batches):  # type: ignore[no-untyped-def]
        import pyarrow as pa

        out = [(kind, row[1], row[2], sequence, row[9])
               for row, kind, sequence in transform.number_sorted(transform.write_rows(batches))]
        yield pa.RecordBatch.from_pylist([dict(zip(("kind", "out_topic", "out_key", "sequence", "src"), r,
                                                   strict=True)) for r in out],
                                         schema=pa.schema([("kind", pa.string()), ("out_topic", pa.string()),
                                                           ("out_key", pa.string()), ("sequence", pa.int64()),
                                                           ("src", pa.string())]))

    result = ordered.mapInArrow(run, "kind string, out_topic string, out_key string, sequence long, src string")
    return [(r["kind"], sequence_key(r["out_topic"] or "", r["out_key"] or ""), r["sequence"], int(r["src"]))
            for r in result.collect()]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spark_sequencing_equals_assign_sequences(spark, seed: int) -> None:
    rows = _rows(seed, 600)
    assert _spark_result(spark, rows) == _expected(rows)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_write_steps_numbering_equals_assign_sequences(spark, seed: int) -> None:
    """One shuffle, a sort within partitions and a Python pass number exactly as the live service does; later
    copies of a dedupe id are `duplicate`s, poison pills pass through unnumbered, each once."""
    rows = _rows(seed, 600)
    poison = [{"kind": "poison", "out_topic": None, "out_key": None, "ordering_token": 0, "src_partition": 0,
               "src_offset": 10_000 + i, "src_topic": "src-a", "dedupe_id": None, "item": 10_000 + i}
              for i in range(5)]
    result = _numbered(spark, rows + poison)
    assert {(key, sequence, item) for kind, key, sequence, item in result if kind == "event"} == _expected(rows)
    assert sorted(item for *_, item in result) == sorted(int(r["item"]) for r in rows + poison)  # type: ignore[call-overload]
    kinds = Counter(kind for kind, *_ in result)
    assert kinds["poison"] == 5 and kinds["event"] + kinds["duplicate"] == len(rows)
    assert all(sequence is None for kind, _, sequence, _ in result if kind != "event")


def test_the_write_steps_numbering_continues_after_a_hand_off(spark) -> None:
    rows = _rows(7, 300)
    start_after = {"a_v2/org-0:i-1": 41, "b_v2/org-2:i-5": 7, "a_v2/not-in-batch": 3}
    result = _numbered(spark, rows, start_after)
    assert {(key, sequence, item) for kind, key, sequence, item in result if kind == "event"} == _expected(
        rows, start_after)


def test_with_kinds_duplicates_and_non_events_pass_through_unnumbered(spark) -> None:
    """The backfill's one-pass form: the same numbering, duplicates marked instead of dropped, poison kept."""
    rows = [{**r, "kind": "event"} for r in _rows(4, 400)]
    poison = [{"out_topic": None, "out_key": None, "ordering_token": 0, "src_partition": 0, "src_offset": 10_000 + i,
               "src_topic": "src-a", "dedupe_id": None, "item": 10_000 + i, "kind": "poison"} for i in range(5)]
    frame_ = spark.createDataFrame(rows + poison, "out_topic string, out_key string, ordering_token long, "
                                   "src_partition long, src_offset long, src_topic string, dedupe_id string, "
                                   "item long, kind string")
    result = transform.sequence_events(frame_, partitions=3).collect()
    numbered = {(sequence_key(r["out_topic"], r["out_key"]), r["sequence"], r["item"])
                for r in result if r["kind"] == "event"}
    assert numbered == _expected(rows)
    kinds = Counter(r["kind"] for r in result)
    assert kinds["poison"] == 5 and kinds["event"] + kinds["duplicate"] == len(rows)
    assert all(r["sequence"] is None for r in result if r["kind"] != "event")


def test_spark_sequencing_continues_after_a_hand_off(spark) -> None:
    rows = _rows(7, 300)
    start_after = {"a_v2/org-0:i-1": 41, "b_v2/org-2:i-5": 7, "a_v2/not-in-batch": 3}
    assert _spark_result(spark, rows, start_after) == _expected(rows, start_after)


def _genesys(org: str, interaction: str, event: str, ts: str) -> bytes:
    return json.dumps({"orgId": org, "interactionId": interaction, "eventId": event, "eventType": "start",
                       "interactionType": "call", "timestamp": ts, "data": {"agentId": "a-1"}}).encode()


def test_translate_source_matches_the_shared_translation_and_routing(spark) -> None:
    catalog = load_catalog(CATALOG)
    family = catalog.default_family
    values: list[bytes | None] = [
        _genesys("org-acme", "i-1", "e-1", "2024-01-01T00:00:00Z"),
        _genesys("org-small", "i-2", "e-2", "2024-01-01T00:00:01.250Z"),
        _genesys("org-initech", "i-3", "e-3", "2024-01-01T00:00:02Z"),
        b"{not json",
        None,
        json.dumps({"orgId": "org-x", "eventId": "e-9", "eventType": "end",
                    "timestamp": "2024-01-01T00:00:00Z"}).encode(),
    ]
    source_rows = [("src", i % 2, 100 + i, b"k", v, 1_700_000_000_000 + i, [("trace", b"t-1")])
                   for i, v in enumerate(values)]
    frame_ = spark.createDataFrame(source_rows, source_schema())
    spec = transform.TranslateSpec(CATALOG.read_text(), str(CATALOG), family, {"src": "ccaas-json"})
    result = {r["src_offset"]: r for r in transform.translate_source(frame_, spec).collect()}
    assert len(result) == len(values)

    full = parse_schema(load_schema("interaction_event"))
    for topic, partition, offset, key, value, ts, headers in source_rows:
        record = SourceRecord(topic, partition, offset, key, value, dict(headers), ts)
        outcome = translate(record, "ccaas-json")
        row = result[offset]
        if isinstance(outcome, DomainEventDraft):
            target = route(catalog, family, outcome.org_id, outcome.interaction_id)
            assert (row["kind"], row["out_topic"], row["out_key"], row["out_partition"]) == (
                "event", target.topic, target.key, target.partition)
            assert (row["ordering_token"], row["dedupe_id"], row["src"]) == (
                outcome.ordering_token, outcome.dedupe_id, f"{topic}/{partition}/{offset}")
            whole = frame(9, encode_body(full, to_avro_record(outcome, 5)))
            assert frame(9, bytes(row["head"]) + b"\x0a" + bytes(row["tail"])) == whole  # zigzag(5) = 0x0a
        elif outcome.__class__.__name__ == "PoisonPill":
            headers_out = {h["key"]: h["value"] for h in row["dlq_headers"]}
            assert row["kind"] == "poison" and bytes(row["dlq_value"]) == value
            assert headers_out["trace"] == b"t-1"
            assert headers_out["dlq.source.offset"] == str(offset).encode()
            assert headers_out["dlq.reason"] == row["reason"].encode()
        else:
            assert row["kind"] == "skip"


def test_output_records_are_what_the_live_service_writes() -> None:
    """An event: Java-parity partition, UTF-8 key, the Avro wire format with its sequence stamped, headers `seq`
    then `src`; a poison pill: the DLQ with its original key, value and headers; the task's tally."""
    from kafka_rekey.shared.avro import SplitEncoder

    encoder = SplitEncoder(load_schema("interaction_event"))
    full = parse_schema(load_schema("interaction_event"))
    draft_record = {
        "org_id": "o", "interaction_id": "i", "event_id": "e", "event_type": "start", "interaction_type": None,
        "event_time": 1_700_000_000_000, "sequence": 0, "source": {"topic": "s", "partition": 1, "offset": 2},
        "ordering_token": 5, "change_op": None, "payload": "{}",
    }
    head, tail = encoder.encode_parts(draft_record)
    event = ("event", "t_v2", "o:i", "e", None, None, 3, frame(42, b"") + head, tail, "s/1/2", None, None, None)
    tally = transform.TaskTally()
    for sequence in [1, 63, 64, 200, 8192, 1_000_000, 2**33]:
        record = transform.output_record(event, "event", sequence, "dlq")
        assert record is not None
        assert record.value == frame(42, encode_body(full, {**draft_record, "sequence": sequence}))
        assert record.headers == [("seq", str(sequence).encode()), ("src", b"s/1/2")]
        assert (record.topic, record.partition, record.key) == ("t_v2", 3, b"o:i")
        tally.add(event, "event", sequence)
    poison = ("poison", None, None, None, None, "bad_json", None, None, None, "s/1/3", b"k", b"{x",
              [{"key": "dlq.reason", "value": b"bad_json"}])
    assert transform.output_record(poison, "poison", None, "dlq") == transform.OutputRecord(
        "dlq", None, b"k", b"{x", [("dlq.reason", b"bad_json")])
    assert transform.output_record(event, "duplicate", None, "dlq") is None
    tally.add(poison, "poison", None)
    assert tally.summary() == {"counts": [["event", None, "t_v2", 7], ["poison", "bad_json", None, 1]], "keys": 1,
                               "written": 7}
    assert tally.lasts == {("t_v2", "o:i"): 2**33}


CDC_TOPIC = "crm.public.interactions"


def _cdc_key(row_id: int, id_type: str = "int64") -> bytes:
    """The record key of the JSON converter with schemas, as Debezium writes it for a surrogate `id` key."""
    return json.dumps({"schema": {"type": "struct", "optional": False, "name": f"{CDC_TOPIC}.Key",
                                  "fields": [{"type": id_type, "optional": False, "field": "id"}]},
                       "payload": {"id": row_id}}).encode()


def _cdc_change(op: str, lsn: int, row: dict[str, object] | None = None, row_id: int = 0) -> bytes:
    image = None if row is None else {"id": row_id, "status": "queued", "interaction_type": "call",
                                      "updated_at": "2024-01-01T00:00:00Z", **row}
    before = {"id": row_id, "org_id": None, "interaction_id": None} if op == "d" else None
    return json.dumps({"before": before, "after": None if op == "d" else image, "op": op, "ts_ms": 1_704_067_200_500,
                       "source": {"connector": "postgresql", "db": "crm", "schema": "public",
                                  "table": "interactions", "lsn": lsn, "ts_ms": 1_704_067_200_000}}).encode()


def test_translated_cdc_rows_carry_what_the_row_memory_learns_and_the_hand_off_keeps_each_rows_last_ids(
        spark) -> None:  # type: ignore[no-untyped-def]
    """Each CDC event row names its row (`row_key`) and ids (`ids_to_remember`); per row the hand-off keeps the
    ids of its last change by offset, whatever schema block its keys carried; other sources, skips and poison
    pills teach nothing."""
    from kafka_rekey.shared.handoff import row_record
    from kafka_rekey.shared.translation import row_key

    ids_1, ids_1_later = {"org_id": "org-a", "interaction_id": "i-1"}, {"org_id": "org-a", "interaction_id": "i-9"}
    ids_2 = {"org_id": "org-b", "interaction_id": "i-2"}
    cdc: list[tuple[int, int, bytes | None, bytes | None]] = [  # partition, offset, key, value
        (0, 8, _cdc_key(1, "int32"), _cdc_change("r", 100, ids_1, 1)),
        (0, 9, _cdc_key(1), _cdc_change("u", 200, ids_1_later, 1)),  # the row moved to another interaction
        (0, 10, _cdc_key(1), _cdc_change("u", 300, {**ids_1_later, "status": "active"}, 1)),
        (1, 3, _cdc_key(2), _cdc_change("c", 150, ids_2, 2)),
        (1, 4, _cdc_key(2), _cdc_change("d", 250, row_id=2)),  # the primary key only: ids from the row memory
        (1, 5, _cdc_key(2), None),  # its tombstone
        (1, 6, _cdc_key(3), b"{not json"),
        (1, 7, _cdc_key(4), _cdc_change("d", 260, row_id=4)),  # a row never seen: unknown_row
    ]
    source_rows = [(CDC_TOPIC, p, o, k, v, 1_700_000_000_000 + o, []) for p, o, k, v in cdc]
    source_rows.append(("src", 0, 1, b"k", _genesys("org-acme", "i-1", "e-1", "2024-01-01T00:00:00Z"),
                        1_700_000_000_000, []))
    frame_ = spark.createDataFrame(source_rows, source_schema())
    spec = transform.TranslateSpec(CATALOG.read_text(), str(CATALOG), load_catalog(CATALOG).default_family,
                                   {CDC_TOPIC: "debezium", "src": "ccaas-json"}, encode=False)
    translated = transform.translate_source(frame_.repartition(1).sortWithinPartitions("partition", "offset"), spec)
    rows = {(r["src_topic"], r["src_partition"], r["src_offset"]): r for r in translated.collect()}

    def taught(topic: str, partition: int, offset: int) -> tuple[object, ...]:
        row = rows[(topic, partition, offset)]
        return (row["kind"], row["reason"], None if row["row_key"] is None else bytes(row["row_key"]),
                row["row_org_id"], row["row_interaction_id"])

    assert taught(CDC_TOPIC, 0, 8) == ("event", None, b'{"id":1}', "org-a", "i-1")
    assert taught(CDC_TOPIC, 0, 9) == ("event", None, b'{"id":1}', "org-a", "i-9")
    assert taught(CDC_TOPIC, 0, 10) == ("event", None, b'{"id":1}', "org-a", "i-9")
    assert taught(CDC_TOPIC, 1, 3) == ("event", None, b'{"id":2}', "org-b", "i-2")
    assert taught(CDC_TOPIC, 1, 4) == ("event", None, b'{"id":2}', "org-b", "i-2")
    assert taught(CDC_TOPIC, 1, 5) == ("skip", "tombstone", None, None, None)
    assert taught(CDC_TOPIC, 1, 6)[0] == "poison" and taught(CDC_TOPIC, 1, 6)[2:] == (None, None, None)
    assert taught(CDC_TOPIC, 1, 7) == ("poison", "unknown_row", None, None, None)
    assert taught("src", 0, 1)[0] == "event" and taught("src", 0, 1)[2:] == (None, None, None)
    assert row_key(_cdc_key(1, "int32")) == row_key(_cdc_key(1)) == b'{"id":1}'

    # The last change by offset, not by LSN nor by arrival: shuffled over partitions before the aggregation.
    last = transform.last_row_ids(translated.repartition(4, "src_offset"))
    assert sorted((r["src_topic"], bytes(r["row_key"]), r["org_id"], r["interaction_id"]) for r in last.collect()) \
        == [(CDC_TOPIC, b'{"id":1}', "org-a", "i-9"), (CDC_TOPIC, b'{"id":2}', "org-b", "i-2")]

    records = transform.checkpoint_row_rows(last, "cp").collect()
    assert {r["topic"] for r in records} == {"cp"}
    assert sorted((bytes(r["key"]), bytes(r["value"])) for r in records) == sorted(
        [row_record(CDC_TOPIC, b'{"id":1}', "org-a", "i-9"), row_record(CDC_TOPIC, b'{"id":2}', "org-b", "i-2")])
    handoff = Handoff()
    for record in records:
        handoff.apply(bytes(record["key"]), bytes(record["value"]))
    assert handoff.row_ids == {(CDC_TOPIC, b'{"id":1}'): ("org-a", "i-9"), (CDC_TOPIC, b'{"id":2}'): ("org-b", "i-2")}


def test_the_last_change_of_a_row_is_the_one_at_the_highest_offset(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [("t", bytearray(b'{"id":1}'), 0, offset, "o", f"i-{offset}") for offset in (7, 1_000, 99, 10_001, 8)]
    rows += [("t", bytearray(b'{"id":2}'), 1, 5, "o", "only"), ("u", bytearray(b'{"id":1}'), 0, 3, "p", "other"),
             ("t", None, 0, 20_000, None, None)]
    frame_ = spark.createDataFrame(rows, "src_topic string, row_key binary, src_partition int, src_offset long, "
                                         "row_org_id string, row_interaction_id string")
    assert sorted((r["src_topic"], bytes(r["row_key"]), r["org_id"], r["interaction_id"])
                  for r in transform.last_row_ids(frame_).collect()) == [
        ("t", b'{"id":1}', "o", "i-10001"), ("t", b'{"id":2}', "o", "only"), ("u", b'{"id":1}', "p", "other")]

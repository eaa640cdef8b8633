"""The hand-off checkpoint's records, folded as the live service and the backfill read them back."""

from __future__ import annotations

import pytest

from kafka_rekey.shared.handoff import (
    Handoff,
    row_key_bytes,
    row_key_text,
    row_record,
    sequence_record,
    source_offset_record,
)
from kafka_rekey.shared.translation import row_key

KEY_WITH_SCHEMA = (b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],'
                   b'"optional":false,"name":"crm.public.interactions.Key"},"payload":{"id":42}}')


def test_the_three_kinds_fold_in_and_later_records_win() -> None:
    handoff = Handoff()
    for key, value in [sequence_record("t_v2", "o:i/x", 3), sequence_record("t_v2", "o:i/x", 7),
                       source_offset_record("crm.public.interactions", 2, 1500),
                       row_record("crm.public.interactions", b'{"id":42}', "org-a", "i-1"),
                       row_record("crm.public.interactions", b'{"id":42}', "org-a", "i-2"),
                       row_record("crm.public.interactions", b'{"id":43}', "org-b", "i-3")]:
        handoff.apply(key, value)
    assert handoff.last_sequences == {"t_v2/o:i/x": 7}
    assert handoff.source_offsets == {("crm.public.interactions", 2): 1500}
    assert handoff.row_ids == {("crm.public.interactions", b'{"id":42}'): ("org-a", "i-2"),
                               ("crm.public.interactions", b'{"id":43}'): ("org-b", "i-3")}


def test_a_row_record_is_keyed_by_topic_and_the_canonical_row_key() -> None:
    key, value = row_record("crm.public.interactions", row_key(KEY_WITH_SCHEMA), "org-a", "i-1")
    assert key == b'row/crm.public.interactions/{"id":42}'
    assert value == b'{"org_id": "org-a", "interaction_id": "i-1"}'
    handoff = Handoff()
    handoff.apply(key, value)
    assert handoff.row_ids[("crm.public.interactions", row_key(KEY_WITH_SCHEMA))] == ("org-a", "i-1")


@pytest.mark.parametrize("key", [
    b'{"id":42}', b'{"path":"a/b","tenant":"t/1"}', b'{"name":"caf\xc3\xa9"}',
    b"\x00\x00\x00\x00\x07\x54",  # Avro's framed key (magic byte, schema id, body)
    b"42", b'"a-string-key"', b"hex:not-json", b"{\xff not utf-8",
])
def test_a_row_key_survives_its_text_form(key: bytes) -> None:
    text = row_key_text(key)
    assert row_key_bytes(text) == key
    handoff = Handoff()
    handoff.apply(*row_record("t", key, "o", "i"))
    assert handoff.row_ids == {("t", key): ("o", "i")}


def test_binary_and_non_object_keys_are_hex() -> None:
    assert row_key_text(b"\x00\x01\xff") == "hex:0001ff"
    assert row_key_text(b"42") == "hex:3432"
    assert row_key_text(b"{\xff") == "hex:7bff"
    assert row_key_text(b'{"id":1}') == '{"id":1}'


def test_a_tombstone_forgets_a_row_and_other_kinds_stay() -> None:
    handoff = Handoff()
    key, value = row_record("t", b'{"id":1}', "o", "i")
    handoff.apply(key, value)
    handoff.apply(*sequence_record("t_v2", "o:i", 2))
    handoff.apply(key, None)
    assert handoff.row_ids == {}
    assert handoff.last_sequences == {"t_v2/o:i": 2}


def test_a_reader_that_does_not_translate_keeps_no_row_ids() -> None:
    handoff = Handoff(keep_row_ids=False)
    handoff.apply(*row_record("t", b'{"id":1}', "o", "i"))
    handoff.apply(*sequence_record("t_v2", "o:i", 2))
    handoff.apply(*source_offset_record("t", 0, 10))
    assert handoff.row_ids == {}
    assert handoff.last_sequences == {"t_v2/o:i": 2}
    assert handoff.source_offsets == {("t", 0): 10}


def test_rows_of_one_org_share_its_id_and_topic_name() -> None:
    handoff = Handoff()
    for n in range(3):
        handoff.apply(*row_record("crm.public.interactions", f'{{"id":{n}}}'.encode(), "org-" + "a" * 20, f"i-{n}"))
    keys, ids = list(handoff.row_ids), list(handoff.row_ids.values())
    assert len({id(topic) for topic, _ in keys}) == 1
    assert len({id(org) for org, _ in ids}) == 1

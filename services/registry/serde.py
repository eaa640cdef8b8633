"""Avro in the Confluent wire format, validated by the schema registry.

`AvroSerde(client, subject, schema)` registers `schema` under `subject` when it is built, so a producer that
cannot reach the registry (or whose schema the registry rejects) fails at start-up and never writes
unvalidated bytes. `encode` frames each record with the cached schema id; `decode` reads any framed message
with the writer schema named by its id (fetched once) resolved to this serde's schema, so records written
with older compatible versions read as the current shape (missing fields get their defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.shared.avro import AvroCodecError, WireFormatError, decode_body, encode_body, frame, unframe


class AvroSerde:
    def __init__(self, client: SchemaRegistryClient, subject: str, schema: Mapping[str, Any] | str) -> None:
        self.client = client
        self.subject = subject
        self.schema_id = client.register(subject, schema)
        self._schema = client.schema_by_id(self.schema_id).parsed

    def encode(self, record: Mapping[str, Any]) -> bytes:
        """The record as magic byte + schema id + Avro body; AvroCodecError names the offending field."""
        try:
            return frame(self.schema_id, encode_body(self._schema, record))
        except AvroCodecError as error:
            raise AvroCodecError(f"cannot encode for subject {self.subject!r}: {error}") from error

    def decode(self, data: bytes) -> dict[str, Any]:
        """The record in this serde's schema, whatever compatible schema id it was written with."""
        try:
            schema_id, body = unframe(data)
        except WireFormatError as error:
            raise WireFormatError(f"cannot decode for subject {self.subject!r}: {error}") from error
        writer = self.client.schema_by_id(schema_id).parsed
        try:
            return decode_body(body, writer, self._schema)
        except AvroCodecError as error:
            raise AvroCodecError(
                f"cannot decode for subject {self.subject!r} (written with schema id {schema_id}): {error}"
            ) from error

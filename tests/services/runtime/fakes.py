"""A plain stand-in for confluent-kafka's `Message`, for the runtime tests that drive its loops without a broker."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FakeMessage:
    topic_name: str
    partition_number: int
    offset_number: int
    key_bytes: bytes | None
    value_bytes: bytes | None

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self.topic_name

    def partition(self) -> int:
        return self.partition_number

    def offset(self) -> int:
        return self.offset_number

    def key(self) -> bytes | None:
        return self.key_bytes

    def value(self) -> bytes | None:
        return self.value_bytes

    def headers(self) -> None:
        return None

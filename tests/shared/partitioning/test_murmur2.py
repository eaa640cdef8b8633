"""murmur2 / toPositive / partition_for against Kafka's own test vectors and an independent reference port."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_rekey.shared.partitioning import key_partition, murmur2, partition_for, to_positive

# org.apache.kafka.common.utils.UtilsTest#testMurmur2, plus the empty input.
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (bytes([ord("a"), ord("b"), ord("c")]), 479470107),
    (b"", 275646681),
]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def reference_murmur2(data: bytes) -> int:
    """A direct transcription of Java's Utils.murmur2 with explicit int32 overflow (independent of murmurhash2)."""
    m, r = 0x5BD1E995, 24
    h = _int32(0x9747B28C ^ len(data))
    for i in range(len(data) // 4):
        k = _int32(int.from_bytes(data[4 * i:4 * i + 4], "little"))
        k = _int32(k * m)
        k ^= (k & 0xFFFFFFFF) >> r
        k = _int32(k * m)
        h = _int32(_int32(h * m) ^ k)
    tail, rest = len(data) % 4, len(data) & ~3
    if tail >= 3:
        h = _int32(h ^ data[rest + 2] << 16)
    if tail >= 2:
        h = _int32(h ^ data[rest + 1] << 8)
    if tail >= 1:
        h = _int32(_int32(h ^ data[rest]) * m)
    h = _int32(h ^ (h & 0xFFFFFFFF) >> 13)
    h = _int32(h * m)
    return _int32(h ^ (h & 0xFFFFFFFF) >> 15)


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS)
def test_kafka_golden_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected
    assert reference_murmur2(data) == expected


def test_to_positive_is_a_mask_not_abs() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(-973932308) == -973932308 & 0x7FFFFFFF
    assert to_positive(479470107) == 479470107


def test_partition_for_matches_java_formula_on_golden_keys() -> None:
    assert partition_for("21", 16) == (-973932308 & 0x7FFFFFFF) % 16
    assert partition_for("foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    assert partition_for("abc", 1) == 0


def test_partition_for_refuses_zero_partitions() -> None:
    with pytest.raises(ValueError, match="partitions must be >= 1, got 0"):
        partition_for("abc", 0)


@given(st.binary(max_size=200))
def test_murmur2_equals_reference_port_on_any_bytes(data: bytes) -> None:
    assert murmur2(data) == reference_murmur2(data)
    assert -(2**31) <= murmur2(data) < 2**31


@given(st.text(max_size=80), st.integers(min_value=1, max_value=10_000))
def test_partition_for_is_deterministic_and_in_range_for_unicode_keys(key: str, partitions: int) -> None:
    first = partition_for(key, partitions)
    assert 0 <= first < partitions
    assert partition_for(key, partitions) == first
    assert first == to_positive(reference_murmur2(key.encode("utf-8"))) % partitions


@given(st.binary(max_size=80), st.integers(min_value=1, max_value=10_000))
def test_key_partition_of_any_bytes_is_the_java_formula(key: bytes, partitions: int) -> None:
    assert key_partition(key, partitions) == to_positive(reference_murmur2(key)) % partitions


def test_unicode_keys_hash_their_utf8_bytes() -> None:
    key = "org-ü:interaction-日本"
    assert murmur2(key.encode("utf-8")) == reference_murmur2(key.encode("utf-8"))
    assert partition_for(key, 64) == to_positive(murmur2(key.encode("utf-8"))) % 64
    assert murmur2(key.encode("utf-8")) != murmur2(key.encode("utf-16-le"))

"""Parity with the real Java client: Kafka's own Utils.murmur2 and BuiltInPartitioner.partitionForKey, run on
the kafka-clients jar the embedded broker uses, over random byte strings and unicode keys."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from kafka_rekey.shared.partitioning import murmur2, partition_for
from kafka_rekey_dev.embedded import maven
from kafka_rekey_dev.embedded.errors import ToolMissing

JAVA_PROGRAM = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

public class Murmur2Parity {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split(",");
            byte[] data = HexFormat.of().parseHex(parts[0]);
            int partitions = Integer.parseInt(parts[1]);
            out.append(Utils.murmur2(data)).append(',')
               .append(BuiltInPartitioner.partitionForKey(data, partitions)).append('\\n');
        }
        System.out.print(out);
    }
}
"""


def _java_results(tmp_path: Path, cases: list[tuple[bytes, int]]) -> list[tuple[int, int]]:
    try:
        java = maven.require_java()
        jars = maven.resolve(f"kafka-{maven.KAFKA_VERSION}")
    except ToolMissing as missing:
        pytest.skip(f"no JVM/Kafka jars for the Java parity check: {missing}")
    source = tmp_path / "Murmur2Parity.java"
    source.write_text(JAVA_PROGRAM)
    stdin = "".join(f"{data.hex()},{partitions}\n" for data, partitions in cases)
    fast_start = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]
    result = subprocess.run([java, *fast_start, "-cp", f"{jars}/*", str(source)], input=stdin, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return [(int(a), int(b)) for a, b in (line.split(",") for line in result.stdout.splitlines())]


def test_murmur2_and_partition_match_the_java_client(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    binary = [(rng.randbytes(rng.randint(0, 70)), rng.randint(1, 1000)) for _ in range(1500)]
    texts = ["", "abc", "org-ü:interaction-日本", "🎉:" + "x" * 33, *(
        f"org-{rng.randint(0, 999)}:{''.join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(1, 20)))}"
        for _ in range(500)
    )]
    unicode_cases = [(text.encode("utf-8"), rng.randint(1, 128)) for text in texts]
    java = _java_results(tmp_path, binary + unicode_cases)
    assert len(java) == len(binary) + len(unicode_cases)
    for (data, partitions), (java_hash, java_partition) in zip(binary, java, strict=False):
        assert murmur2(data) == java_hash, data.hex()
        assert (murmur2(data) & 0x7FFFFFFF) % partitions == java_partition
    for text, (data, partitions), (java_hash, java_partition) in zip(
        texts, unicode_cases, java[len(binary):], strict=True
    ):
        assert murmur2(data) == java_hash, text
        assert partition_for(text, partitions) == java_partition, text

"""Build and run the Kafka Streams baseline (`AclStreams.java`) of `rekey bench acl`.

Its jars (Kafka Streams at the broker's Kafka version, Jackson, Avro) come from Maven like the broker's
(`maven.resolve`); `javac` compiles the source into `.cache/kafka-streams-bench/<digest>/`, redone whenever the
source or the jars change. The domain schema is registered under the output topic's subject, and the app writes
its id in every value's wire header.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.runtime.settings import RuntimeSettings
from kafka_rekey.services.settings import ProcessingGuarantee, RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey_dev.embedded.errors import ToolMissing
from kafka_rekey_dev.embedded.maven import KAFKA_VERSION, REPO_ROOT, require_java, resolve

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "AclStreams.java"
LOG_CONFIG = HERE / "log4j2.properties"
MAIN_CLASS = "dev.rekey.bench.AclStreams"
BUNDLE = f"kafka-streams-{KAFKA_VERSION}"
BUILD_CACHE = REPO_ROOT / ".cache" / "kafka-streams-bench"
SCHEMA_FILE = REPO_ROOT / "shared" / "schemas" / "interaction_event.avsc"
AT_LEAST_ONCE, EXACTLY_ONCE = "at_least_once", "exactly_once_v2"
REKEY_GUARANTEE: dict[str, ProcessingGuarantee] = {AT_LEAST_ONCE: "at_least_once", EXACTLY_ONCE: "exactly_once"}


def build() -> str:
    """The app's classpath, compiling it first if the source or its jars changed since the last build."""
    jars = resolve(BUNDLE)
    digest = hashlib.sha256(SOURCE.read_bytes() + (jars / ".complete").read_bytes()).hexdigest()[:16]
    classes = BUILD_CACHE / digest
    classpath = f"{classes}:{jars}/*"
    if (classes / ".complete").exists():
        return classpath
    javac = shutil.which("javac")
    if javac is None:
        raise ToolMissing("javac not found on PATH: the Kafka Streams baseline needs a JDK 17 (e.g. openjdk-17-jdk)")
    if classes.exists():
        shutil.rmtree(classes)
    classes.mkdir(parents=True)
    result = subprocess.run([javac, "--release", "17", "-cp", f"{jars}/*", "-d", str(classes), str(SOURCE)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ToolMissing(f"javac could not compile {SOURCE.name}:\n{(result.stdout + result.stderr)[-2000:]}")
    (classes / ".complete").write_text(digest)
    return classpath


def register_schema(registry_url: str, output: str) -> int:
    """The id of the domain schema registered under `<output>-value`."""
    with SchemaRegistryClient(RegistrySettings(url=registry_url)) as registry:
        return registry.register(f"{output}-value", load_schema("interaction_event"))


@dataclass(frozen=True)
class AclStreamsApp:
    """One run of the app: where it reads and writes, its group and state, and its processing guarantee."""

    bootstrap: str
    source: str
    output: str
    application_id: str
    state_dir: Path
    stamp: Path
    guarantee: str = AT_LEAST_ONCE

    def command(self, registry_url: str) -> list[str]:
        """The JVM's command line (built, and the schema registered, first)."""
        if self.guarantee not in REKEY_GUARANTEE:
            raise ValueError(f"processing guarantee {self.guarantee!r}: expected one of {sorted(REKEY_GUARANTEE)}")
        # rekey's defaults, so both sides commit as often and repartition over as many partitions.
        rekey = RuntimeSettings(processing_guarantee=REKEY_GUARANTEE[self.guarantee], commit_interval_ms=None)
        classpath = build()
        schema_id = register_schema(registry_url, self.output)
        return [
            require_java(), f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", classpath, MAIN_CLASS,
            self.bootstrap, self.source, self.output, self.application_id, str(self.state_dir), str(self.stamp),
            self.guarantee, str(SCHEMA_FILE), str(schema_id), str(rekey.internal_partitions),
            str(rekey.checkpoint_interval_ms),
        ]

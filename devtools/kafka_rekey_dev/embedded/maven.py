"""Resolve jar bundles from Maven Central once, into a git-ignored cache inside the checkout, and reuse them.

A bundle is a named list of Maven coordinates; its jars land in `.cache/jars/<bundle>/` together with a
`.complete` marker, so an interrupted download is redone rather than half-used.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from kafka_rekey_dev.embedded.errors import ToolMissing

REPO_ROOT = Path(__file__).resolve().parents[3]
JAR_CACHE = REPO_ROOT / ".cache" / "jars"
DIST_CACHE = REPO_ROOT / ".cache" / "dist"

KAFKA_VERSION = "4.1.1"
SPARK_VERSION = "4.1.1"
LOG4J_VERSION = "2.24.3"
DEBEZIUM_VERSION = "3.6.1.Final"
_LOGGING = [
    f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
    f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
    "org.slf4j:slf4j-api:2.0.17",
]

BUNDLES: dict[str, list[str]] = {
    f"kafka-{KAFKA_VERSION}": [
        f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        *_LOGGING,
    ],
    # A Kafka Connect worker with Debezium's PostgreSQL connector on its classpath (no plugin.path isolation).
    f"connect-{KAFKA_VERSION}": [
        f"org.apache.kafka:connect-runtime:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-json:{KAFKA_VERSION}",
        f"io.debezium:debezium-connector-postgres:{DEBEZIUM_VERSION}",
        # Debezium asks for 2.21.2, a Jackson module newer than the databind (2.19.0) Kafka brings; a module
        # must not be newer than its databind, so it is held at Kafka's Jackson version.
        "com.fasterxml.jackson.datatype:jackson-datatype-jsr310:2.19.0",
        *_LOGGING,
    ],
    # The Kafka Streams baseline of `rekey bench acl`, at the broker's Kafka and Jackson versions.
    f"kafka-streams-{KAFKA_VERSION}": [
        "com.fasterxml.jackson.core:jackson-databind:2.19.0",
        f"org.apache.kafka:kafka-streams:{KAFKA_VERSION}",
        "org.apache.avro:avro:1.12.0",
        *_LOGGING,
    ],
    # Kafka's own command-line clients (ConsoleConsumer, ...), for tests that need a client that is not Python.
    f"kafka-tools-{KAFKA_VERSION}": [
        f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
        *_LOGGING,
    ],
    f"spark-kafka-{SPARK_VERSION}": [
        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}",
        # `rekey backfill --from-files PATH --file-format avro` reads archived history with Spark's Avro source.
        f"org.apache.spark:spark-avro_2.13:{SPARK_VERSION}",
    ],
}
# Version pins a bundle falls back to when Maven Central, as reached from here, lacks a transitive artifact:
# it has spark-sql-kafka-0-10 4.1.1 but not spark-token-provider-kafka-0-10 4.1.1, whose newest release there is
# 4.0.0; every token-provider method the 4.1.1 connector calls has the same signature in 4.0.0 (checked with javap).
FALLBACK_PINS: dict[str, list[str]] = {
    # Kafka's own command-line clients (ConsoleConsumer, ...), for tests that need a client that is not Python.
    f"kafka-tools-{KAFKA_VERSION}": [
        f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
        *_LOGGING,
    ],
    f"spark-kafka-{SPARK_VERSION}": ["org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0"],
}
# Jars that Maven's nearest-wins mediation pulls in older than the ones listed above.
EXCLUDED_JARS = {f"kafka-{KAFKA_VERSION}": re.compile(r"^slf4j-api-1\.")}
# Spark ships these itself; a second copy on the classpath breaks it. (`_` ends a Spark module name, so the
# connector `spark-sql-kafka-0-10_2.13` itself is kept.)
PROVIDED_BY_SPARK = re.compile(
    r"^(spark-(core|sql|catalyst|tags|unsafe|network-[a-z]+|common-[a-z-]+)_|scala-|hadoop-client-|slf4j|log4j"
    r"|lz4-java|snappy-java|jsr305|xz-)"
)


def _dependencies(coordinates: list[str]) -> str:
    deps = []
    for coordinate in coordinates:
        group, artifact, version = coordinate.split(":")
        deps.append(
            f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version></dependency>"
        )
    return f"<dependencies>{''.join(deps)}</dependencies>"


def _pom(coordinates: list[str], pins: list[str] | None = None) -> str:
    managed = f"<dependencyManagement>{_dependencies(pins)}</dependencyManagement>" if pins else ""
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>dev.rekey</groupId><artifactId>bundle</artifactId><version>1</version>"
        f"<packaging>pom</packaging>{managed}{_dependencies(coordinates)}</project>"
    )


def require_java(minimum: int = 17) -> str:
    java = shutil.which("java")
    if java is None:
        raise ToolMissing(f"java not found on PATH: install a JDK {minimum} or newer (e.g. openjdk-17-jre-headless)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if match is None:
        raise ToolMissing(f"could not read the Java version from `java -version`: {out.strip()!r}")
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < minimum:
        raise ToolMissing(f"Java {major} found at {java}; Kafka {KAFKA_VERSION} needs Java {minimum} or newer")
    return java


def resolve(bundle: str) -> Path:
    """Return the directory holding every jar of `bundle`, downloading it with Maven the first time."""
    target = JAR_CACHE / bundle
    if (target / ".complete").exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolMissing("Maven (mvn) not found on PATH: it fetches the Kafka and Spark jars from Maven Central")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as work:
        pom = Path(work) / "pom.xml"
        for pins in ([], *([FALLBACK_PINS[bundle]] if bundle in FALLBACK_PINS else [])):
            pom.write_text(_pom(BUNDLES[bundle], pins))
            result = subprocess.run(
                [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
                 f"-DoutputDirectory={target}", "-DincludeScope=runtime"],
                capture_output=True, text=True, check=False,
            )
            if result.returncode == 0:
                break
    if result.returncode != 0:
        raise ToolMissing(f"Maven could not resolve bundle {bundle}:\n{(result.stdout + result.stderr)[-2000:]}")
    excluded = EXCLUDED_JARS.get(bundle)
    for jar in target.glob("*.jar"):
        if excluded is not None and excluded.match(jar.name):
            jar.unlink()
    (target / ".complete").write_text("\n".join(BUNDLES[bundle]))
    return target


def spark_connector_jars() -> list[Path]:
    """The spark-sql-kafka connector and its dependencies, minus what Spark itself already ships."""
    directory = resolve(f"spark-kafka-{SPARK_VERSION}")
    return sorted(j for j in directory.glob("*.jar") if not PROVIDED_BY_SPARK.match(j.name))


def resolve_distribution(name: str, coordinate: str) -> Path:
    """Return the directory an archive artifact (`group:artifact:version:zip:classifier`) is unpacked into.

    Used for applications Maven Central ships as a ready-to-run zip (e.g. the schema registry); it is fetched
    with Maven and unpacked into `.cache/dist/<name>/` the first time, with a `.complete` marker.
    """
    target = DIST_CACHE / name
    if (target / ".complete").exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolMissing(f"Maven (mvn) not found on PATH: it fetches {coordinate} from Maven Central")
    if target.exists():
        shutil.rmtree(target)
    with tempfile.TemporaryDirectory() as work:
        result = subprocess.run(
            [mvn, "-q", "-B", "dependency:copy", f"-Dartifact={coordinate}", f"-DoutputDirectory={work}"],
            capture_output=True, text=True, check=False, cwd=work,
        )
        if result.returncode != 0:
            raise ToolMissing(f"Maven could not fetch {coordinate}:\n{(result.stdout + result.stderr)[-2000:]}")
        archives = list(Path(work).glob("*.zip"))
        if len(archives) != 1:
            raise ToolMissing(f"expected one zip for {coordinate} in {work}, found {[a.name for a in archives]}")
        with zipfile.ZipFile(archives[0]) as archive:
            archive.extractall(target)
    (target / ".complete").write_text(coordinate)
    return target

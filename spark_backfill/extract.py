"""Extract: the full history of a source, as one normalised DataFrame of source records.

Two sources are supported:
- a Kafka topic, from its earliest offsets (or given start offsets) up to a snapshot of its end offsets taken
  once at the start (`snapshot`), so a re-run reads exactly the same records however much the topic has grown
  since; the Python workers read the snapshot's ranges themselves (`kafka_ranges`);
- archived history in Parquet, Avro or JSON files (e.g. a Kafka Connect S3 export) carrying the source
  position of every record.

Both yield `SOURCE_COLUMNS`: topic, partition, offset, key (binary), value (binary), timestamp_ms, headers
(array<struct<key: string, value: binary>>).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pydantic import SecretStr

from kafka_rekey.services.settings import KafkaSettings, read_properties
from kafka_rekey.shared.handoff import OffsetRange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SOURCE_COLUMNS = ("topic", "partition", "offset", "key", "value", "timestamp_ms", "headers")
FILE_FORMATS = ("parquet", "json", "avro")


_TRANSIENT = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
              KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._TIMED_OUT}


def watermarks(config: Mapping[str, Any], topic: str, timeout: float = 10.0,
               retry_for: float = 30.0) -> dict[int, tuple[int, int]]:
    """(low, high) watermark of every partition of `topic`; ValueError when the topic does not exist.
    Leadership changes (e.g. just after the topic was created) are retried for up to `retry_for` seconds."""
    consumer = Consumer({**config, "group.id": f"rekey-snapshot-{uuid.uuid4()}", "enable.auto.commit": False})
    deadline = time.monotonic() + retry_for
    try:
        while True:
            metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
            if metadata is None or metadata.error is not None or not metadata.partitions:
                if metadata is not None and metadata.error is not None and time.monotonic() < deadline \
                        and metadata.error.code() == KafkaError.LEADER_NOT_AVAILABLE:
                    time.sleep(0.5)
                    continue
                raise ValueError(f"topic {topic!r} does not exist")
            try:
                return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
                        for p in sorted(metadata.partitions)}
            except KafkaException as error:
                if error.args[0].code() not in _TRANSIENT or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def snapshot(config: Mapping[str, Any], topic: str, start_after: Mapping[int, int] | None = None) -> OffsetRange:
    """The offsets a backfill of `topic` covers: from the earliest retained (or `start_after[p]`, a previous
    hand-off) up to the end offsets as of now."""
    marks = watermarks(config, topic)
    start = {p: max(low, (start_after or {}).get(p, low)) for p, (low, _high) in marks.items()}
    end = {p: max(high, start[p]) for p, (_low, high) in marks.items()}
    return OffsetRange(topic, start, end)


_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
    "GSSAPI": "com.sun.security.auth.module.Krb5LoginModule",
}


def spark_kafka_options(kafka: KafkaSettings) -> dict[str, str]:
    """The Java client settings of `kafka` as Spark Kafka source/sink options (`kafka.` prefixed): every way the
    services connect (TLS with a PEM CA, mTLS with a PEM certificate and key, SASL PLAIN/SCRAM/OAUTHBEARER/GSSAPI),
    and the properties file's lines as they are (the Java client ignores, with a warning, what only librdkafka
    knows)."""
    options = {f"kafka.{name}": value for name, value in
               (read_properties(kafka.properties_file) if kafka.properties_file else {}).items()}
    options |= {"kafka.bootstrap.servers": kafka.bootstrap_servers, "kafka.security.protocol": kafka.security_protocol}
    if kafka.sasl_mechanism:
        options["kafka.sasl.mechanism"] = kafka.sasl_mechanism
        options["kafka.sasl.jaas.config"] = f"{_LOGIN_MODULES[kafka.sasl_mechanism]} required{_jaas_options(kafka)};"
    if kafka.sasl_mechanism == "OAUTHBEARER":
        options["kafka.sasl.login.callback.handler.class"] = \
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
        options["kafka.sasl.oauthbearer.token.endpoint.url"] = str(kafka.oauth_token_endpoint_url)
    if kafka.sasl_mechanism == "GSSAPI":
        options["kafka.sasl.kerberos.service.name"] = kafka.kerberos_service_name
    if kafka.ssl_ca_location:
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.location"] = str(kafka.ssl_ca_location)
    if kafka.ssl_certificate_location and kafka.ssl_key_location:
        # The Java client takes a PEM key store as text: certificate chain and (PKCS#8) private key.
        options["kafka.ssl.keystore.type"] = "PEM"
        options["kafka.ssl.keystore.certificate.chain"] = kafka.ssl_certificate_location.read_text()
        options["kafka.ssl.keystore.key"] = kafka.ssl_key_location.read_text()
        if kafka.ssl_key_password:
            options["kafka.ssl.key.password"] = kafka.ssl_key_password.get_secret_value()
    return options


def _jaas_options(kafka: KafkaSettings) -> str:
    """The login module's options in `sasl.jaas.config` for the mechanism."""
    if kafka.sasl_mechanism == "GSSAPI":
        return f' useKeyTab=true storeKey=true keyTab="{kafka.kerberos_keytab or ""}" ' \
               f'principal="{kafka.kerberos_principal or ""}"'
    if kafka.sasl_mechanism == "OAUTHBEARER":
        pairs = {"clientId": kafka.oauth_client_id or "", "clientSecret": _secret(kafka.oauth_client_secret)}
        if kafka.oauth_scope:
            pairs["scope"] = kafka.oauth_scope
    else:
        pairs = {"username": kafka.sasl_username or "", "password": _secret(kafka.sasl_password)}
    return "".join(f' {name}="{value}"' for name, value in pairs.items())


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value() if value else ""


def source_schema() -> Any:
    from pyspark.sql import types as T

    return T.StructType([
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("timestamp_ms", T.LongType()),
        T.StructField("headers", T.ArrayType(T.StructType([
            T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]))),
    ])


def read_files(spark: SparkSession, path: str, file_format: str, topic: str) -> DataFrame:
    """Archived history as `SOURCE_COLUMNS`.

    Required columns: `partition`, `offset`, `value`. Optional: `topic` (default: the `--source` name),
    `key`, `timestamp` (ms since the epoch, or a timestamp) or `timestamp_ms`, `headers` (array of
    {key, value}). In JSON files `key`, `value` and header values are UTF-8 text; Parquet/Avro may hold bytes
    or text.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if file_format not in FILE_FORMATS:
        raise ValueError(f"--file-format must be one of {', '.join(FILE_FORMATS)}, got {file_format!r}")
    frame = spark.read.format(file_format).load(path)
    columns = set(frame.columns)
    missing = {"partition", "offset", "value"} - columns
    if missing:
        raise ValueError(f"archived history in {path} lacks column(s) {', '.join(sorted(missing))}; "
                         f"found {', '.join(sorted(columns))}")

    def as_binary(name: str) -> Any:
        if name not in columns:
            return F.lit(None).cast("binary")
        column = F.col(name)
        kind = frame.schema[name].dataType
        return column if isinstance(kind, T.BinaryType) else F.encode(column.cast("string"), "UTF-8")

    if "timestamp_ms" in columns:
        timestamp = F.col("timestamp_ms").cast("long")
    elif "timestamp" in columns:
        kind = frame.schema["timestamp"].dataType
        timestamp = (F.unix_millis(F.col("timestamp")) if isinstance(kind, T.TimestampType)
                     else F.col("timestamp").cast("long"))
    else:
        timestamp = F.lit(0).cast("long")
    header_type = T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                            T.StructField("value", T.BinaryType())]))
    if "headers" in columns:
        headers = F.transform(F.col("headers"), lambda h: F.struct(
            h["key"].cast("string").alias("key"),
            (h["value"] if _header_value_is_binary(frame.schema["headers"].dataType)
             else F.encode(h["value"].cast("string"), "UTF-8")).alias("value"),
        )).cast(header_type)
    else:
        headers = F.lit(None).cast(header_type)
    return frame.select(
        (F.col("topic").cast("string") if "topic" in columns else F.lit(topic)).alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        as_binary("key").alias("key"),
        as_binary("value").alias("value"),
        timestamp.alias("timestamp_ms"),
        headers.alias("headers"),
    )


def _header_value_is_binary(kind: Any) -> bool:
    from pyspark.sql import types as T

    try:
        return isinstance(kind.elementType["value"].dataType, T.BinaryType)
    except (AttributeError, KeyError):
        return False


def file_offsets(frame: DataFrame, topic: str) -> OffsetRange:
    """The per-partition offset range archived files cover (for the hand-off after a files backfill)."""
    from pyspark.sql import functions as F

    rows = frame.groupBy("partition").agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect()
    return OffsetRange(topic, {int(r["partition"]): int(r["lo"]) for r in rows},
                       {int(r["partition"]): int(r["hi"]) + 1 for r in rows})

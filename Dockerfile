# syntax=docker/dockerfile:1.7
#
# rekey container images.
#
#   docker build -t rekey:0.1.0 .                                  # services + topic job (target `service`)
#   docker build --target backfill -t rekey-backfill:0.1.0 .       # Spark backfill driver/executors
#
# Both run as the non-root user rekey (uid/gid 10001) and work with a read-only root filesystem:
# the only writable paths they need are /tmp and /var/lib/rekey (emptyDirs in the Helm chart).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

############################################################################################
# build: the kafka-rekey distribution and its dependencies in a virtualenv, without Spark.
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# A compiler for the rare dependency without a wheel for this platform; it stays in this stage.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*

RUN python -m venv /opt/rekey/venv
ENV PATH=/opt/rekey/venv/bin:$PATH

WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY services ./services
COPY shared ./shared
COPY spark_backfill ./spark_backfill
RUN pip install .

############################################################################################
# build-spark: the same virtualenv plus PySpark, for the backfill image only.
FROM build AS build-spark
RUN pip install ".[spark]"

############################################################################################
# runtime: what both images share - the rekey user, its writable data dir and the catalog.
FROM ${PYTHON_IMAGE} AS runtime

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/rekey/venv/bin:$PATH \
    HOME=/tmp \
    REKEY_DATA_DIR=/var/lib/rekey \
    REKEY_CATALOG_PATH=/etc/rekey/catalog.yaml

RUN groupadd --system --gid 10001 rekey \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/rekey --no-create-home \
            --shell /usr/sbin/nologin rekey \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/rekey \
 && install -d -m 0755 /etc/rekey

COPY catalog/topics.yaml /etc/rekey/catalog.yaml

############################################################################################
# backfill: runtime + a JRE, the Spark Kafka connector and the Spark-on-Kubernetes entrypoint.
# Spark starts its pods with the arguments `driver ...` (Spark Operator, cluster mode) or `executor`;
# any other arguments run the rekey CLI (the chart's backfill Job runs `rekey backfill ...`).
FROM runtime AS backfill

COPY --from=build-spark /opt/rekey/venv /opt/rekey/venv

# Spark 4 needs Java 17+; tini reaps the JVM's children and forwards signals.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless tini \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java

ENV JAVA_HOME=/opt/java \
    SPARK_HOME=/opt/rekey/venv/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/opt/rekey/venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/rekey/venv/bin/python

# The Kafka source/sink of Spark is not part of pyspark: resolve it (and its own dependencies) once at
# build time with Spark's Ivy resolver, so the pods never download anything.
ARG SPARK_KAFKA_PACKAGE=org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1
RUN python -c "from pyspark.sql import SparkSession; SparkSession.builder.master('local[1]').config('spark.jars.packages', '${SPARK_KAFKA_PACKAGE}').config('spark.jars.ivy', '/tmp/ivy').getOrCreate().stop()" \
 && for jar in spark-sql-kafka spark-token-provider-kafka kafka-clients commons-pool2; do \
      cp -v /tmp/ivy/jars/*"${jar}"-*.jar "${SPARK_HOME}/jars/"; \
    done \
 && rm -rf /tmp/ivy /tmp/spark-* /tmp/blockmgr-*

# spark-submit only runs Python applications from a .py file, not from the `rekey` console script.
COPY --chmod=0644 <<'EOF' /opt/rekey/rekey_cli.py
"""Spark application file running the rekey CLI, for spark-submit (e.g. the Spark Operator)."""

from kafka_rekey.services.cli.main import main

main()
EOF

COPY --chmod=0755 <<'EOF' /opt/rekey/entrypoint.sh
#!/usr/bin/env bash
# Entrypoint of the rekey backfill image.
#   driver ARGS...  Spark-on-Kubernetes driver pod (cluster mode): spark-submit in client mode inside the pod
#   executor        Spark-on-Kubernetes executor pod: the executor backend, configured by Spark's env vars
#   anything else   the rekey CLI
set -euo pipefail

case "${1:-}" in
  driver)
    shift
    exec tini -s -- spark-submit \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client \
      "$@"
    ;;
  executor)
    shift
    # Spark passes executor JVM options as SPARK_JAVA_OPT_<n>=<option>, in order of n.
    java_opts=()
    while IFS= read -r option; do
      java_opts+=("${option}")
    done < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
    classpath="${SPARK_CONF_DIR:-${SPARK_HOME}/conf}:${SPARK_HOME}/jars/*"
    if [[ -n "${SPARK_EXTRA_CLASSPATH:-}" ]]; then
      classpath="${classpath}:${SPARK_EXTRA_CLASSPATH}"
    fi
    exec tini -s -- "${JAVA_HOME}/bin/java" "${java_opts[@]}" \
      "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" \
      -cp "${classpath}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" \
      --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" \
      --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
      --podName "${SPARK_EXECUTOR_POD_NAME}"
    ;;
  *)
    exec tini -s -- rekey "$@"
    ;;
esac
EOF

USER 10001:10001
WORKDIR /var/lib/rekey
ENTRYPOINT ["/opt/rekey/entrypoint.sh"]
CMD ["--help"]

############################################################################################
# service (default target): the four services and the topic job. Health, readiness and metrics on 6066.
FROM runtime AS service

COPY --from=build /opt/rekey/venv /opt/rekey/venv

USER 10001:10001
WORKDIR /var/lib/rekey
EXPOSE 6066
ENTRYPOINT ["rekey"]
CMD ["--help"]

"""`rekey run SERVICE`: start one of rekey's long-running services in the foreground."""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated

import typer

from kafka_rekey.services.cli.catalog_options import BootstrapOption
from kafka_rekey.services.cli.errors import infrastructure_errors, settings_errors


class Service(StrEnum):
    acl = "acl"
    projection = "projection"
    sink = "sink"
    reconciler = "reconciler"


def _run_worker(service: Service, stage: str | None) -> None:
    from kafka_rekey.services.observability.logs import configure_logging
    from kafka_rekey.services.runtime.settings import RuntimeSettings

    settings = RuntimeSettings()
    configure_logging(service.value, settings.log_level, settings.log_format)
    if service is Service.acl:
        from kafka_rekey.services.acl.app import Stage, create_worker

        worker = create_worker(settings, frozenset({Stage(stage)}) if stage else frozenset(Stage))
    else:
        from kafka_rekey.services.projection.app import create_worker as create_projection

        worker = create_projection(settings)
    worker.run()


def _require_kafka() -> None:
    """Fail with one line and exit code 1 when no broker answers, before any client starts retrying for ever."""
    from kafka_rekey.services.kafka.connectivity import require_kafka
    from kafka_rekey.services.settings import KafkaSettings

    require_kafka(KafkaSettings().librdkafka())


def run(
    service: Annotated[Service, typer.Argument(help="Which service to run.")],
    stage: Annotated[str | None, typer.Option(
        "--stage", help="acl only: run one stage, `translate` or `sequence` (default: both in one process).",
    )] = None,
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Run a service until SIGTERM/SIGINT (then it finishes its batch, checkpoints, leaves the group and exits).

    \b
    acl         translate source topics, re-key, stamp per-key sequences into the versioned domain topics
    projection  project domain events into the org-activity topic keyed by org_id
    sink        apply a domain topic to a database table with version guards and watermarks
    reconciler  audit source, domain topic and sink per org and window; emit ReconciliationRequired
    """
    if stage is not None and (service is not Service.acl or stage not in ("translate", "sequence")):
        raise typer.BadParameter("--stage takes `translate` or `sequence`, and only with `acl`", param_hint="--stage")
    from kafka_rekey.services.observability.librdkafka import route_client_logs

    route_client_logs(False)  # a service's clients log through librdkafka itself (see observability.librdkafka)
    if bootstrap_servers:
        os.environ["REKEY_KAFKA_BOOTSTRAP_SERVERS"] = bootstrap_servers  # every service reads its settings from it
    with infrastructure_errors(), settings_errors():
        _require_kafka()
        if service in (Service.acl, Service.projection):
            _run_worker(service, stage)
        elif service is Service.sink:
            from kafka_rekey.services.sink.service import run_sink

            run_sink()
        else:
            from kafka_rekey.services.reconciliation.service import run_reconciler

            run_reconciler()


def register(app: typer.Typer) -> None:
    app.command(name="run")(run)

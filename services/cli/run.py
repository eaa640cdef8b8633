"""`rekey run SERVICE`: start one of rekey's long-running services in the foreground."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class Service(StrEnum):
    acl = "acl"
    projection = "projection"
    sink = "sink"
    reconciler = "reconciler"


def _run_faust(service: Service) -> None:
    from faust.worker import Worker

    from services.streaming.app import state_directory
    from services.streaming.local_state import mark_clean
    from services.streaming.settings import StreamSettings

    settings = StreamSettings()
    if service is Service.acl:
        from services.acl.app import create_app
    else:
        from services.projection.app import create_app
    app = create_app(settings)
    try:
        Worker(app, loglevel=settings.log_level.lower(), quiet=True).execute_from_commandline()
    except SystemExit as exit_:
        if exit_.code in (0, None) and app.crash_reason is None:
            mark_clean(state_directory(settings, app.conf.id))
        raise


def run(service: Annotated[Service, typer.Argument(help="Which service to run.")]) -> None:
    """Run a service until SIGTERM/SIGINT (then it commits offsets, flushes, leaves the group and exits).

    \b
    acl         translate source topics, re-key, stamp per-key sequences into the versioned domain topics
    projection  project domain events into the org-activity topic keyed by org_id
    sink        apply a domain topic to a database table with version guards and watermarks
    reconciler  audit source, domain topic and sink per org and window; emit ReconciliationRequired
    """
    if service in (Service.acl, Service.projection):
        _run_faust(service)
    elif service is Service.sink:
        from services.sink.service import run_sink

        run_sink()
    else:
        from services.reconciliation.service import run_reconciler

        run_reconciler()


def register(app: typer.Typer) -> None:
    app.command(name="run")(run)

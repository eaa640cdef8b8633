"""ACL and projection workers restarted while the schema registry is unreachable, as real processes on the real
broker and registry: they run on the schema ids they remembered from their previous start (one log line says so)
and process what arrives; a schema never registered from the data directory still needs the registry and fails
the start-up with one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from kafka_rekey.services.check.run import manifest_expectations, run_check
from kafka_rekey.services.generation.writer import generate_to_topic
from kafka_rekey.services.registry.client import SchemaRegistryClient
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey.shared.avro import load_schema
from kafka_rekey.shared.catalog import Catalog
from kafka_rekey_dev.embedded.errors import NotReady
from kafka_rekey_dev.embedded.processes import free_port
from kafka_rekey_dev.embedded.workers import ServiceProcess
from tests.support.forwarding import Forwarder
from tests.support.kafka import read_topic
from tests.support.services import acl_env
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.registry]

RECALLED = "schema registry unreachable: using the schema ids remembered from an earlier registration"


@pytest.fixture
def forwarded_registry(schema_registry_url: str) -> Iterator[tuple[Forwarder, str]]:
    """The session registry behind a port of its own: closing it is an outage at the URL the worker knows."""
    url = urlsplit(schema_registry_url)
    if url.scheme != "http" or url.hostname is None or url.port is None:
        pytest.skip("the outage is a closed forwarding port, for a plain-HTTP registry with a port")
    forwarder = Forwarder(url.hostname, url.port)
    try:
        yield forwarder, url._replace(netloc=f"127.0.0.1:{forwarder.port}").geturl()
    finally:
        forwarder.close()


def _run_until_produced(service: str, name: str, env: dict[str, str], tmp_path: Path, outputs: int) -> ServiceProcess:
    worker = ServiceProcess(service, env, tmp_path, name=name).start()
    try:
        wait_until(lambda: worker.metric("rekey_produced_total", service=service) >= outputs, 120,
                   f"{name} produced {outputs} records")
        worker.terminate()
    except AssertionError as error:
        raise AssertionError(f"{error}; {name} log tail:\n{worker.log_tail(60)}") from None
    finally:
        worker.stop()
    return worker


def _recalled(worker: ServiceProcess) -> dict[str, Any]:
    """The worker's one log line saying it runs on remembered schema ids."""
    lines = worker.log_path.read_text().splitlines()
    logged: list[dict[str, Any]] = [json.loads(line) for line in lines if RECALLED in line]
    assert len(logged) == 1, worker.log_tail(60)
    return logged[0]


def _acl_schemas(catalog: Catalog) -> dict[str, str]:
    """The subjects the ACL registers at start-up, each with its schema's name."""
    return {catalog.topic(topic).schema_subject: "interaction_event" for family in catalog.families.values()
            for topic in family.output_topics}


def _projection_schemas(catalog: Catalog) -> dict[str, str]:
    """The subjects the projection registers at start-up: the domain topics it reads and its output topic."""
    return {**{catalog.topic(topic).schema_subject: "interaction_event"
               for topic in catalog.family(catalog.default_family).output_topics},
            catalog.topic(catalog.org_activity_topic).schema_subject: "org_activity"}


def test_workers_restarted_during_a_registry_outage_run_on_the_schema_ids_they_remembered(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, schema_registry_url: str,
    forwarded_registry: tuple[Forwarder, str], tmp_path: Path,
) -> None:
    """The ACL, and the projection behind it, each started once with the registry up and once with it gone."""
    catalog_path, catalog = provisioned_catalog
    source = catalog.sources[0].name
    families = len(catalog.sources[0].feeds)
    forwarder, url = forwarded_registry
    env = acl_env(kafka_bootstrap, url, catalog_path, tmp_path / "state")
    projection_env = {**env, "REKEY_APP_ID": env["REKEY_APP_ID"] + "-projection"}
    first, second, combined = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "all.jsonl"

    generate_to_topic(kafka_bootstrap, source, 400, 8, seed=31, manifest_path=first)
    events = len(manifest_expectations(first, source)[0])
    _run_until_produced("acl", "acl-1", env, tmp_path, events * families)
    _run_until_produced("projection", "projection-1", projection_env, tmp_path, events)

    forwarder.close()  # the registry is out of reach from here on
    generate_to_topic(kafka_bootstrap, source, 400, 8, seed=32, manifest_path=second)
    combined.write_text(first.read_text() + second.read_text())
    events = len(manifest_expectations(second, source)[0])
    acl = _run_until_produced("acl", "acl-2", env, tmp_path, events * families)
    projection = _run_until_produced("projection", "projection-2", projection_env, tmp_path, events)

    registry = SchemaRegistryClient(RegistrySettings(url=schema_registry_url))
    for worker, schemas in ((acl, _acl_schemas(catalog)), (projection, _projection_schemas(catalog))):
        logged = _recalled(worker)
        assert logged["registry"] == url and "unreachable" in logged["error"]
        assert logged["subjects"] == {subject: registry.register(subject, load_schema(name))
                                      for subject, name in schemas.items()}
    for family in catalog.sources[0].feeds:  # both runs' events on the domain topics, decodable by their ids
        report = run_check(KafkaSettings(bootstrap_servers=kafka_bootstrap),
                           RegistrySettings(url=schema_registry_url), catalog, family, combined, source)
        assert report.passed(False), (family, report.violations(False), report.lost[:5], report.gaps[:5])
    activity = read_topic(kafka_bootstrap, catalog.org_activity_topic)
    assert len(activity) == len(manifest_expectations(combined, source)[0])

    # A subject the worker never registered from this data directory still needs the registry.
    renamed = catalog.topic(catalog.family(catalog.default_family).output_topics[0]).schema_subject
    catalog_path.write_text(catalog_path.read_text().replace(f"schema_subject: {renamed}\n",
                                                             f"schema_subject: renamed-{renamed}\n"))
    with pytest.raises(NotReady, match="exited with 1"):
        ServiceProcess("acl", env, tmp_path, name="acl-3").start()
    errors = [line for line in (tmp_path / "acl-3.log").read_text().splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert f"schema registry at {url} is unreachable while registering a schema under subject " \
           f"'renamed-{renamed}'" in errors[0] and "no id remembered for this schema" in errors[0]


def test_a_worker_without_remembered_ids_fails_at_start_up_while_the_registry_is_unreachable(
    provisioned_catalog: tuple[Path, Catalog], kafka_bootstrap: str, tmp_path: Path,
) -> None:
    catalog_path, _ = provisioned_catalog
    url = f"http://127.0.0.1:{free_port(47400)}/apis/ccompat/v7"
    env = acl_env(kafka_bootstrap, url, catalog_path, tmp_path / "empty-state")
    with pytest.raises(NotReady, match="exited with 1"):
        ServiceProcess("acl", env, tmp_path).start()
    errors = [line for line in (tmp_path / "acl.log").read_text().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"schema registry at {url} is unreachable while registering" in errors[0]
    assert "no id remembered for this schema" in errors[0]

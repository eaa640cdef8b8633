"""A throw-away Prometheus server on 127.0.0.1 (the `prometheus` binary on the PATH, Debian's package) scraping
given targets, and its HTTP API's queries."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from kafka_rekey_dev.embedded.errors import EmbeddedInfraError, NotReady, ToolMissing
from kafka_rekey_dev.embedded.processes import free_port, stop_group, tail, terminate_with_parent


class QueryFailed(EmbeddedInfraError):
    """Prometheus refused a query; the message names the query and Prometheus' reason."""


class PrometheusServer:
    """`prometheus` with its own config and TSDB under `workdir`, scraping every `scrape_seconds`.
    Targets are (address, target labels) pairs, the labels standing in for what service discovery would add."""

    def __init__(self, workdir: Path, scrape_seconds: float) -> None:
        self.workdir = workdir
        self.scrape_seconds = scrape_seconds
        self.port = free_port(19090)
        self.log_path = workdir / "prometheus.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, targets: Sequence[tuple[str, Mapping[str, str]]], ready_timeout: float = 60.0) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise ToolMissing("no `prometheus` on the PATH: install Debian's package (apt-get install prometheus)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        interval = f"{self.scrape_seconds:g}s"
        config = {
            "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
            "scrape_configs": [{"job_name": "rekey", "honor_labels": False, "static_configs": [
                {"targets": [address], "labels": dict(labels)} for address, labels in targets]}],
        }
        config_path = self.workdir / "prometheus.yml"
        config_path.write_text(yaml.safe_dump(config))
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [binary, f"--config.file={config_path}", f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=terminate_with_parent,
            )
        deadline = time.monotonic() + ready_timeout
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise NotReady(f"prometheus not ready on :{self.port} in {ready_timeout:.0f}s:\n"
                               f"{tail(self.log_path, 20)}")
            time.sleep(0.3)

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process.pid, 15)
            self.process.wait(5)

    def query_range(self, expr: str, start: float, end: float, step_seconds: float) -> list[dict[str, Any]]:
        """The `matrix` result of `expr` over [start, end] (Unix seconds) every `step_seconds`."""
        response = httpx.get(f"{self.url}/api/v1/query_range", timeout=30,
                             params={"query": expr, "start": start, "end": end, "step": step_seconds})
        body = response.json()
        if body.get("status") != "success":
            raise QueryFailed(f"prometheus refused {expr!r}: {body.get('errorType')}: {body.get('error')}")
        return list(body["data"]["result"])

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant `vector` result of `expr` now."""
        body = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=30).json()
        if body.get("status") != "success":
            raise QueryFailed(f"prometheus refused {expr!r}: {body.get('errorType')}: {body.get('error')}")
        return list(body["data"]["result"])

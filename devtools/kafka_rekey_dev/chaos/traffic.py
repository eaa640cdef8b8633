"""Source traffic that keeps flowing while faults are injected: generated chunks sent from a background thread.

Each chunk is one `generate_to_topic` call with its own seed and manifest; the manifests are concatenated at the
end, so `rekey check` compares the outputs with everything that was really acknowledged by the broker.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from kafka_rekey.services.generation.writer import GenerationSummary, generate_to_topic

HOT_ORGS = ("org-acme", "org-globex", "org-initech")


@dataclass
class TrafficPlan:
    events: int
    orgs: int = 40
    upfront: float = 0.4
    """Share of the events sent before any worker starts (a backlog for the first fault to land in)."""
    chunks: int = 6
    """The rest is sent in this many chunks ..."""
    pause: float = 1.0
    """... this many seconds apart."""
    malformed_rate: float = 0.002
    duplicate_rate: float = 0.01
    seed: int = 1


@dataclass
class Traffic:
    bootstrap: str
    topic: str
    plan: TrafficPlan
    workdir: Path
    summaries: list[GenerationSummary] = field(default_factory=list)
    error: BaseException | None = None
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _unpaced: threading.Event = field(default_factory=threading.Event)
    _sent: threading.Condition = field(default_factory=threading.Condition)

    def _send(self, index: int, events: int) -> None:
        if events <= 0:
            return
        self.summaries.append(generate_to_topic(
            self.bootstrap, self.topic, events, self.plan.orgs, hot_orgs=HOT_ORGS,
            malformed_rate=self.plan.malformed_rate, duplicate_rate=self.plan.duplicate_rate,
            seed=self.plan.seed * 1000 + index, manifest_path=self.workdir / f"manifest-{index:03d}.jsonl",
        ))
        with self._sent:
            self._sent.notify_all()

    def send_upfront(self) -> None:
        self._send(0, int(self.plan.events * self.plan.upfront))

    def _chunk_sizes(self) -> list[int]:
        rest = self.plan.events - int(self.plan.events * self.plan.upfront)
        return [rest // self.plan.chunks + (1 if i < rest % self.plan.chunks else 0) for i in range(self.plan.chunks)]

    def start(self, chunks: int | None = None) -> Traffic:
        """Send the rest of the events in chunks from a background thread; only the first `chunks` when given
        (the scenario sends the others with `send_chunk`)."""
        sizes = self._chunk_sizes()[:chunks]

        def run() -> None:
            try:
                for index, size in enumerate(sizes, start=1):
                    self._unpaced.wait(self.plan.pause)  # pacing, not synchronisation
                    if self._stop.is_set():
                        return
                    self._send(index, size)
            except BaseException as error:  # surfaced by join()
                self.error = error

        self._thread = threading.Thread(target=run, name="chaos-traffic", daemon=True)
        self._thread.start()
        return self

    def send_chunk(self, number: int) -> None:
        """Send chunk `number` (1-based) now, in the caller's thread: for a scenario that places its fault between
        two chunks itself instead of letting `start` pace them."""
        self._send(number, self._chunk_sizes()[number - 1])

    def wait_next_chunk(self, timeout: float) -> bool:
        """Wait until the background thread has sent one more chunk (its records are then arriving at the
        workers); False when it has sent them all or none came within `timeout`."""
        with self._sent:
            before = len(self.summaries)
            return self._sent.wait_for(lambda: len(self.summaries) > before or self.done, timeout) \
                and len(self.summaries) > before

    @property
    def done(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def join(self, timeout: float = 600.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"traffic still sending after {timeout:.0f}s")
        if self.error is not None:
            raise RuntimeError(f"traffic generation failed: {self.error}") from self.error

    def send_rest_unpaced(self) -> None:
        """Send the chunks still to come without their pauses: once a scenario's faults are over, the pacing has
        no fault left to give a stream to."""
        self._unpaced.set()

    def stop(self) -> None:
        self._stop.set()
        self._unpaced.set()
        if self._thread is not None:
            self._thread.join(120)

    def manifest(self) -> Path:
        """All chunks' manifests in one file."""
        combined = self.workdir / "manifest.jsonl"
        with combined.open("w") as out:
            for path in sorted(self.workdir.glob("manifest-*.jsonl")):
                out.write(path.read_text())
        return combined

    @property
    def records(self) -> int:
        return sum(s.records for s in self.summaries)

"""The fault scenarios. Each runs real ACL workers against real brokers, injects its fault while records are in
flight, waits for the group to drain and checks every output record against the generator's manifest."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_rekey.services.acl.envelope import decode_envelopes
from kafka_rekey.services.check.run import manifest_expectations
from kafka_rekey.services.kafka.offsets import committed_offsets
from kafka_rekey.services.kafka.reading import iter_from
from kafka_rekey.services.settings import KafkaSettings, RegistrySettings
from kafka_rekey_dev.chaos.backfill import backfill_kill
from kafka_rekey_dev.chaos.connect import connect_kill
from kafka_rekey_dev.chaos.harness import ChaosEnv, ChaosResult, ChaosRun, chaos_run
from kafka_rekey_dev.chaos.traffic import TrafficPlan

Log = Callable[[str], None]

COMMIT_INTERVAL = 1.0
"""`REKEY_COMMIT_INTERVAL_MS` of the runtime services (services/runtime/settings.py), in seconds."""


def _begin(run: ChaosRun, workers: int = 1, paced_chunks: int | None = None) -> None:
    run.traffic.send_upfront()
    for index in range(1, workers + 1):
        run.start_worker(f"acl-{index}")
    run.traffic.start(paced_chunks)


def _finish(run: ChaosRun) -> ChaosResult:
    run.drain()
    run.stop_workers()
    return run.check()


def kill_restart(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None,
                 kills: int = 3) -> ChaosResult:
    """kill -9 of the worker's process group mid-stream, restarted with the same state directory, `kills` times."""
    # A restart takes about 25 s under exactly_once (the killed member's session, transactional producers, a full
    # table restore), 5-10 s under at_least_once: traffic keeps coming in bursts for ~90 s so every kill still
    # has a stream to land in (a short plan was all processed before the third kill: no moment was left).
    # The worker is stopped (SIGSTOP) right after a paced burst was sent, while it is taking that burst, and the
    # last `kills` chunks are the scenario's own, one sent while it is stopped before each kill: records are in
    # flight when the kill lands whatever the worker's speed. A progress probe alone could miss every paced
    # burst (no moment with 100 records in flight in ~90 s: once in three full CI runs).
    plan = TrafficPlan(events, upfront=0.2, chunks=18, pause=5.0)
    with chaos_run(env, "kill", plan, exactly_once, log) as run:
        _begin(run, paced_chunks=plan.chunks - kills)
        for number in range(1, kills + 1):
            run.wait_fraction(number / (kills + 2), min_backlog=0)  # progress, not yet the moment
            if not run.traffic.wait_next_chunk(2 * plan.pause):
                run.log(f"kill -9 #{number}: the paced bursts are all sent; stopping an idle worker")
            worker = run.workers["acl-1"]
            worker.pause()
            run.traffic.send_chunk(plan.chunks - kills + number)
            run.wait_fraction(0.0, min_backlog=max(1, events // 60))
            fault = run.inject(f"kill -9 #{number}", worker.kill, stops_all_commits=True)
            run.start_worker("acl-1")
            run.wait_recovered(fault)
        return _finish(run)


def rebalance(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """Scale 1 -> 3 -> 1 workers (own state directory and web port each, one group) while traffic flows."""
    # Under exactly_once scaling out takes 25-40 s (transactional producers, table restores from read_committed
    # changelogs): the short plan was all processed by then, and no moment with records in flight was left for
    # the scale-in. Traffic comes in bursts for ~90 s, as in `kill_restart`.
    plan = (TrafficPlan(events, upfront=0.2, chunks=18, pause=5.0) if exactly_once
            else TrafficPlan(events, upfront=0.25, chunks=12, pause=1.5))
    backlog = max(1, events // 30) if exactly_once else 1
    with chaos_run(env, "rebalance", plan, exactly_once, log) as run:
        _begin(run)
        # exactly_once: all of the upfront share committed and a burst arriving (earlier, the worker finished the
        # upfront share while the new workers started: INVALID at 600/600).
        run.wait_fraction(plan.upfront if exactly_once else 0.15, min_backlog=backlog)

        def scale_out() -> None:
            run.start_worker("acl-2")
            run.start_worker("acl-3")

        run.wait_recovered(run.inject("scale 1 -> 3", scale_out))

        def scale_in() -> None:
            for name in ("acl-2", "acl-3"):
                seconds = run.workers[name].terminate(30)
                run.require(seconds < 30, f"{name} took {seconds:.1f}s to stop")

        run.wait_fraction(0.45, min_backlog=backlog)
        run.wait_recovered(run.inject("scale 3 -> 1", scale_in))
        return _finish(run)


SESSION_TIMEOUT = 10.0
"""`REKEY_SESSION_TIMEOUT_MS` of the runtime services, in seconds."""


def pause(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """Two workers; SIGSTOP one for twice the session timeout while the other takes over its partitions, then
    SIGCONT it: whatever it had in hand must not reach the outputs as anything but an identical re-emission
    (exactly-once: nothing at all), and its late commits must be refused."""
    plan = TrafficPlan(events, upfront=0.2, chunks=12, pause=3.0)
    with chaos_run(env, "pause", plan, exactly_once, log) as run:
        _begin(run, workers=2)
        run.wait_fraction(0.2, min_backlog=max(1, events // 30))
        paused = run.workers["acl-1"]
        fault = run.inject(f"SIGSTOP acl-1 for {2 * SESSION_TIMEOUT:.0f}s", paused.pause)
        run.wait_recovered(fault)  # acl-2 owns every partition and commits past the moment of the pause
        resume_at = fault.monotonic + 2 * SESSION_TIMEOUT
        time.sleep(max(0.0, resume_at - time.monotonic()))  # the length of the fault, not a synchronisation
        paused.resume()
        run.wait_fraction(0.7, min_backlog=0)  # progress after the resume, not a moment for a fault
        code = paused.process.poll() if paused.process is not None else None
        run.require(code is None, f"the resumed worker exited with {code}:\n{paused.log_tail(25)}")
        return _finish(run)


def _leader(env: ChaosEnv, topic: str, partition: int) -> int:
    with AdminClient(env.kafka_config) as admin:
        metadata = admin.list_topics(topic, timeout=15).topics[topic]
    return int(metadata.partitions[partition].leader)


def _group_coordinator(env: ChaosEnv, group: str) -> int:
    with AdminClient(env.kafka_config) as admin:
        description = admin.describe_consumer_groups([group], request_timeout=15)[group].result(20)
    return int(description.coordinator.id)


def broker_failure(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """3 brokers, RF=3, min.insync.replicas=2: stop the leader of a source partition and restart it; later
    kill -9 the group's coordinator (offsets and transactional offsets go to it) and restart it."""
    cluster = env.cluster
    if cluster is None or len(cluster.node_ids) != 3:
        raise ValueError("the broker scenario needs the 3-node embedded cluster")
    # Traffic keeps coming in bursts for ~55 s: a broker restart (20-30 s, longer on a loaded machine) must not
    # outlast the stream, and each burst leaves a backlog for a fault to land in.
    # The last chunk is the scenario's own: sent while the worker is stopped (SIGSTOP), so it is in flight when
    # the kill lands. The runtime takes a burst faster than a progress probe finds a moment in it (no moment with
    # a backlog was found in ten bursts at 3,000 events).
    plan = TrafficPlan(events, upfront=0.2, chunks=12, pause=5.0)
    with chaos_run(env, "broker", plan, exactly_once, log) as run:
        try:
            _begin(run, paced_chunks=plan.chunks - 1)
            first = _leader(env, run.source, 0)
            run.wait_fraction(0.1, min_backlog=max(1, events // 16))
            fault = run.inject(f"SIGTERM broker {first} (leader {run.source}/0)", lambda: cluster.stop_node(first))
            run.wait_recovered(fault)
            cluster.start_node(first)
            cluster.wait_ready(120)
            run.traffic.send_rest_unpaced()  # the last fault lands in the scenario's own chunk, not in a paced one
            run.traffic.join(run.timeout)
            second = _group_coordinator(env, run.app_id)  # looked up before the moment: nothing in between
            worker = run.workers["acl-1"]
            worker.pause()
            run.traffic.send_chunk(plan.chunks)
            run.wait_fraction(0.0, min_backlog=max(1, events // 60))
            fault = run.inject(f"kill -9 broker {second} (coordinator of group {run.app_id})",
                               lambda: cluster.stop_node(second, hard=True))
            worker.resume()
            run.wait_recovered(fault)
            cluster.start_node(second, wait=False)  # it rejoins while the group drains; `finally` waits for it
            return _finish(run)
        finally:
            for node in cluster.node_ids:  # leave all three running
                cluster.start_node(node)
            cluster.wait_ready(120)


def poison_pills(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """1% malformed records mixed into the stream: each must reach the DLQ, none may block its partition."""
    with chaos_run(env, "poison", TrafficPlan(events, malformed_rate=0.01), exactly_once, log) as run:
        _begin(run)
        run.wait_fraction(0.3)
        worker = run.workers["acl-1"]
        fault = run.inject("1% poison pills in the stream", lambda: None)
        dead_lettered = worker.metric("rekey_dead_lettered_total", service="acl")
        run.require(dead_lettered > 0, "no poison pill had been dead-lettered at 30% progress")
        run.wait_recovered(fault)
        result = _finish(run)
        _, poison = manifest_expectations(run.traffic.manifest(), run.source)
        fault.name = f"{len(poison)} poison pills (1%)"
        run.require(len(poison) >= events // 200, f"only {len(poison)} poison pills were generated")
        return result


def _committed_offsets(env: ChaosEnv, group: str, topic: str) -> dict[int, int]:
    with AdminClient(env.kafka_config) as admin:
        partitions = admin.list_topics(topic, timeout=15).topics[topic].partitions
    committed = committed_offsets(env.kafka_config, group, [(topic, p) for p in partitions])
    return {partition: offset for (_, partition), offset in committed.items() if offset >= 0}


def redelivery(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """Stop the worker, move the group's source offsets back to half of what it had committed, restart: the
    re-read records must come out again with their original sequences, no new sequence may be given."""
    with chaos_run(env, "redelivery", TrafficPlan(events), exactly_once, log) as run:
        _begin(run)
        run.wait_fraction(0.5)
        rewound: dict[int, tuple[int, int]] = {}
        unsequenced: list[int] = []

        def rewind() -> None:
            seconds = run.workers["acl-1"].terminate(30)
            run.require(seconds < 30, f"clean stop took {seconds:.1f}s")
            unsequenced.append(_uncommitted_envelopes(env, run.app_id, run.sequencing))
            committed = _committed_offsets(env, run.app_id, run.source)
            rewound.update({p: (offset // 2, offset) for p, offset in committed.items() if offset > 1})
            request = ConsumerGroupTopicPartitions(
                run.app_id, [TopicPartition(run.source, p, start) for p, (start, _) in rewound.items()])
            with AdminClient(env.kafka_config) as admin:
                _wait_group_empty(admin, run.app_id, 60)
                admin.alter_consumer_group_offsets([request], request_timeout=60)[run.app_id].result(90)

        fault = run.inject("group offsets rewound to half", rewind)
        run.start_worker("acl-1")
        run.wait_recovered(fault)
        result = _finish(run)
        manifest = run.traffic.manifest()
        only_replayed, replayed = _events_in(manifest, rewound)
        families = len(env.catalog.sources[0].feeds)
        fault.name = f"source rewound by {sum(end - start for start, end in rewound.values()):,} records"
        run.require(replayed > 0, "the rewound range held no event")
        if not exactly_once:
            # Every valid event re-read is emitted again, identical, once per family. At-least-once may also
            # re-emit the envelopes the sequence stage had not committed when the worker stopped, and no more.
            duplicates = result.total("duplicates")
            run.require(only_replayed * families <= duplicates <= replayed * families + unsequenced[0],
                        f"duplicates {duplicates} outside re-read events {only_replayed}-{replayed} x {families}"
                        f" families + {unsequenced[0]} uncommitted envelopes")
        run.result.notes.append(f"re-read events: {only_replayed:,}-{replayed:,} x {families} families")
        return result


def _uncommitted_envelopes(env: ChaosEnv, group: str, sequencing: str) -> int:
    """Envelopes in the sequencing topic past the group's committed offsets (an internal record carries many)."""
    envelopes = 0
    for message in iter_from(env.kafka_config, sequencing, _committed_offsets(env, group, sequencing),
                             isolation="read_uncommitted"):
        value = message.value()
        envelopes += len(decode_envelopes(value)) if value is not None else 0
    return envelopes


def _wait_group_empty(admin: AdminClient, group: str, timeout: float) -> None:
    """Offsets of a group can only be altered while it has no member (the stopped worker has left it)."""
    deadline = time.monotonic() + timeout
    while True:
        description = admin.describe_consumer_groups([group], request_timeout=15)[group].result(20)
        if description.state in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"group {group} still {description.state} after {timeout:.0f}s")
        time.sleep(0.5)


def _events_in(manifest_path: object, ranges: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """Bounds on the events re-read from `ranges` that come out again: (events whose every occurrence was
    re-read, events with any occurrence re-read). An upstream duplicate is numbered where it was first
    processed, which across source partitions need not be the occurrence the generator wrote first."""
    import json
    from pathlib import Path

    occurrences: dict[str, list[bool]] = {}
    with Path(str(manifest_path)).open() as lines:
        for line in lines:
            row = json.loads(line)
            if row["kind"] in ("event", "duplicate"):
                window = ranges.get(row["partition"])
                occurrences.setdefault(row["event_id"], []).append(
                    bool(window and window[0] <= row["offset"] < window[1]))
    return (sum(all(seen) for seen in occurrences.values()), sum(any(seen) for seen in occurrences.values()))


def sigterm(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """SIGTERM under load: the worker stops cleanly within 30 s; after the restart nothing beyond the uncommitted
    tail is processed again: duplicates <= what the worker produces in one commit interval."""
    plan = TrafficPlan(events, chunks=12, pause=3.0) if exactly_once else TrafficPlan(events)
    with chaos_run(env, "sigterm", plan, exactly_once, log) as run:
        _begin(run)
        run.wait_fraction(0.2)
        worker = run.workers["acl-1"]
        before, started = worker.metric("rekey_produced_total", service="acl"), time.monotonic()
        run.wait_committed(run.committed() + 1, run.timeout)  # sample the rate over at least one commit
        rate = (worker.metric("rekey_produced_total", service="acl") - before) / (time.monotonic() - started)
        run.wait_fraction(0.4, min_backlog=max(1, events // 30) if exactly_once else 1)
        stop: dict[str, float] = {}
        fault = run.inject("SIGTERM", lambda: stop.update(seconds=worker.terminate(30)))
        run.require(stop["seconds"] < 30, f"clean stop took {stop['seconds']:.1f}s")
        run.start_worker("acl-1")
        run.wait_recovered(fault)
        result = _finish(run)
        bound = int(rate * COMMIT_INTERVAL) + 1
        run.require(result.total("duplicates") <= bound,
                    f"{result.total('duplicates')} records re-emitted after a clean stop > bound {bound} "
                    f"(output rate {rate:.0f}/s x commit interval {COMMIT_INTERVAL}s)")
        fault.name = f"SIGTERM (stopped in {stop['seconds']:.1f}s)"
        run.result.notes.append(f"clean stop {stop['seconds']:.1f}s; duplicate bound {bound}")
        return result



def backfill_seam(env: ChaosEnv, events: int, exactly_once: bool = False, log: Log | None = None) -> ChaosResult:
    """The backfill-to-live seam: Spark republishes the history (80% of the events) into every family the source
    feeds and writes the hand-off; the live worker starts from it, takes a first live chunk, is killed (kill -9)
    while the last chunk is in flight, and is restarted. Every key must run 1..n across the seam: a history
    event processed again by the live worker would get a second number (a violation the check reports)."""
    # The last chunk is sent while the worker is stopped (SIGSTOP), so it is in flight when the kill lands
    # whatever the worker's speed: the runtime takes a 1,000-record burst in well under a second, faster than a
    # progress probe can find the moment (no moment was found at 10,000/10,000).
    plan = TrafficPlan(events, upfront=0.8, chunks=2)
    with chaos_run(env, "seam", plan, exactly_once, log) as run:
        run.traffic.send_upfront()
        _backfill_history(env, run)
        worker = run.start_worker("acl-1")
        run.traffic.send_chunk(1)
        run.wait_committed(int(events * plan.upfront) + 1, run.timeout)  # its first live records committed
        worker.pause()
        run.traffic.send_chunk(2)
        run.wait_fraction(plan.upfront, min_backlog=max(1, events // 60))
        fault = run.inject("kill -9 right after the hand-off", worker.kill, stops_all_commits=True)
        run.start_worker("acl-1")
        run.wait_recovered(fault)
        return _finish(run)


def _backfill_history(env: ChaosEnv, run: ChaosRun) -> None:
    from kafka_rekey.spark_backfill.jobs.backfill import BackfillRequest, run_backfill
    from kafka_rekey.spark_backfill.session import build_session
    from kafka_rekey_dev.embedded.spark import dev_connector_jars

    # The running session when there is one (the tests').
    spark = build_session("rekey-chaos-seam", jars=dev_connector_jars())
    kafka, registry = KafkaSettings(bootstrap_servers=env.bootstrap), RegistrySettings(url=env.registry_url)
    for family in env.catalog.sources[0].feeds:
        report = run_backfill(spark, BackfillRequest([run.source], family, env.catalog_path), kafka, registry)
        run.log(f"backfilled {family}: {report.written:,} records, {report.keys:,} keys in {report.seconds:.0f}s")
        run.result.notes.append(f"backfilled {family}: {report.written:,} records")


@dataclass(frozen=True)
class Scenario:
    run: Callable[..., ChaosResult]
    cluster: bool = False
    description: str = ""


SCENARIOS: dict[str, Scenario] = {
    "kill": Scenario(kill_restart, description="kill -9 of a worker mid-stream, restarted, 3 times"),
    "rebalance": Scenario(rebalance, description="scale workers 1 -> 3 -> 1 under load"),
    "broker": Scenario(broker_failure, cluster=True,
                       description="3 brokers: stop + restart the partition leader, then kill -9 a broker"),
    "poison": Scenario(poison_pills, description="1% poison pills mixed into the stream"),
    "redelivery": Scenario(redelivery, description="source group offsets rewound: redelivered records"),
    "sigterm": Scenario(sigterm, description="SIGTERM under load: clean stop, bounded re-processing"),
    "pause": Scenario(pause, description="SIGSTOP a worker past its session timeout, then SIGCONT: fenced"),
    "seam": Scenario(backfill_seam, description="Spark backfill, hand-off, live worker killed right after it"),
    "connect": Scenario(connect_kill, description="Debezium on Kafka Connect streaming a CRM workload: kill -9 of "
                                                  "the Connect worker mid-stream, restarted"),
    "backfill": Scenario(backfill_kill, description="rekey backfill: kill -9 of its Python workers in the write "
                                                    "stage after a first task committed (on a cluster, then of an "
                                                    "executor JVM); verified exactly once"),
}

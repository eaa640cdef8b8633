"""Temporary EOS diagnosis (not collected: no test_ prefix). Run explicitly."""
from __future__ import annotations

import collections
import json

from services.chaos.scenarios import _begin
from services.chaos.harness import chaos_run
from services.chaos.traffic import TrafficPlan
from services.check.drain import group_progress
from services.kafka.reading import iter_topic


def test_diag(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env
    with chaos_run(env, "diag", TrafficPlan(3000), True, print) as run:
        _begin(run)
        run.wait_fraction(0.35)
        topics = [run.source, run.sequencing]
        before = group_progress(env.kafka_config, run.app_id, topics)
        run.workers["acl-1"].kill()
        after = group_progress(env.kafka_config, run.app_id, topics)
        print("at kill committed", {f"{t}/{p}": c for (t, p), c in after.committed.items()})
        print("at kill end", {f"{t}/{p}": c for (t, p), c in after.end.items()})
        run.start_worker("acl-1")
        run.drain()
        run.stop_workers()
        cfg = env.kafka_config
        env_by_src = collections.defaultdict(list)
        for m in iter_topic(cfg, run.sequencing):
            e = json.loads(m.value())
            env_by_src[(e["source"], e["topic"])].append((m.partition(), m.offset()))
        multi = {k: v for k, v in env_by_src.items() if len(v) > 1}
        print("envelopes", len(env_by_src), "with >1 copies", len(multi))
        seq_committed = {p: c for (t, p), c in after.committed.items() if t == run.sequencing}
        src_committed = {p: c for (t, p), c in after.committed.items() if t == run.source}
        below = sum(1 for v in multi.values() for (p, o) in v[:1] if o < seq_committed.get(p, -1))
        print("multi-copy envelopes whose first copy is below the committed sequencing offset:", below)
        srcs_below = sum(1 for (s, _t) in multi if int(s.rsplit("/", 1)[1]) < src_committed.get(int(s.rsplit("/", 2)[1]), -1))
        print("multi-copy envelopes whose source offset is below the committed source offset at kill:", srcs_below)
        # duplicated outputs
        result = run.check()
        print("duplicates", result.total("duplicates"), "violations", result.violations)
        print("before kill", before.committed_total(run.source), before.committed_total(run.sequencing))
        for k, v in list(multi.items())[:5]:
            print(k, v)

"""Baseline (c) of `rekey bench acl`: the re-key as Quix Streams does it, `group_by` + a stateful per-key
sequence + produce, one family.

Stage 1 decodes the JSON source record and repartitions it with `group_by` on `orgId:interactionId` through
Quix's internal repartition topic; stage 2 numbers the events of each key in Quix's RocksDB state (a dense
per-key sequence, the rekey ACL's main job without its dedupe memory) and produces the event, with its `seq`, to
one scratch output topic keyed by the group key. At-least-once, Quix's defaults otherwise, except that the
output is stamped with the time it is produced, as every other pipeline's (Quix keeps the source record's
timestamp by default, which the bench reads as the moment of output).

Quix Streams pins an older confluent-kafka than rekey, so this runs in its own virtualenv (`quix_env`) and
imports nothing of rekey: `python quix_group_by.py BOOTSTRAP SOURCE OUTPUT GROUP STATE_DIR STAMP`. It writes the
wall-clock time of its first consumed record to STAMP; SIGTERM stops it cleanly (Quix checkpoints and closes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from quixstreams import Application, State


def main(bootstrap: str, source: str, output: str, group: str, state_dir: str, stamp: str) -> None:
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                      processing_guarantee="at-least-once", state_dir=state_dir, commit_interval=1.0)
    first = [Path(stamp)]

    def stamped(event: Any) -> Any:
        if first:
            first.pop().write_text(repr(time.time()))
        return event

    def sequenced(event: dict[str, Any], state: State) -> dict[str, Any]:
        number = int(state.get("seq", 0)) + 1
        state.set("seq", number)
        return {**event, "seq": number}

    events = app.dataframe(app.topic(source, value_deserializer="json"))
    events = events.apply(stamped)
    events = events.filter(lambda e: isinstance(e, dict) and bool(e.get("orgId")) and bool(e.get("interactionId")))
    events = events.group_by(lambda e: f"{e['orgId']}:{e['interactionId']}", name="by-interaction")
    events = events.apply(sequenced, stateful=True)
    events = events.set_timestamp(lambda _value, _key, _timestamp, _headers: time.time_ns() // 1_000_000)
    events.to_topic(app.topic(output, value_serializer="json", key_serializer="str"))
    app.run()


if __name__ == "__main__":
    main(*sys.argv[1:7])

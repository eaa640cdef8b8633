"""Build domain events for the sink's pure tests."""

from __future__ import annotations

from kafka_rekey.shared.sink.events import SinkEvent, SourcePosition


def event(interaction: str = "i1", sequence: int = 1, event_time: int | None = None, org: str = "o1",
          event_id: str | None = None, event_type: str = "start") -> SinkEvent:
    return SinkEvent(
        output_key=f"{org}:{interaction}", org_id=org, interaction_id=interaction,
        event_id=event_id or f"{org}-{interaction}-{sequence}", event_type=event_type, interaction_type="call",
        event_time=1_000_000 + sequence * 1000 if event_time is None else event_time, sequence=sequence,
        source=SourcePosition("raw", 0, sequence), ordering_token=sequence, change_op=None, payload="{}",
    )

"""The sink table's row for one interaction, as a function of the interaction's applied events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_rekey.shared.sink.events import Interaction, SinkEvent


@dataclass(frozen=True, slots=True)
class StateRow:
    """The interaction's current state: its newest event by (event_time, sequence) and how many it has."""

    latest: SinkEvent
    event_count: int


def derive_state(events: Iterable[SinkEvent]) -> dict[Interaction, StateRow]:
    """The state rows that applying `events` in any order, with the version guard, leaves in the table."""
    latest: dict[Interaction, SinkEvent] = {}
    counts: dict[Interaction, int] = {}
    for event in events:
        current = latest.get(event.interaction)
        if current is None or event.version > current.version:
            latest[event.interaction] = event
        counts[event.interaction] = counts.get(event.interaction, 0) + 1
    return {interaction: StateRow(event, counts[interaction]) for interaction, event in latest.items()}

"""The per-table watermark: the sink is complete up to `T - delta`, T being the largest event time seen.

Events at or after the watermark are applied (late but within `delta`); older ones go to the corrections table
instead of rewriting closed state. A disabled watermark (`delta_ms=None`) admits everything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Watermark:
    delta_ms: int | None
    max_event_time: int | None = None

    @property
    def safe_up_to(self) -> int | None:
        """Event times below this are closed; None while nothing was seen or when disabled."""
        if self.delta_ms is None or self.max_event_time is None:
            return None
        return self.max_event_time - self.delta_ms

    def admits(self, event_time: int) -> bool:
        safe = self.safe_up_to
        return safe is None or event_time >= safe

    def observe(self, event_time: int) -> Watermark:
        if self.max_event_time is not None and event_time <= self.max_event_time:
            return self
        return replace(self, max_event_time=event_time)

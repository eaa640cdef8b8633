"""What a checkpoint step raises when the uncommitted work must be redone."""

from __future__ import annotations


class CheckpointFailed(RuntimeError):
    """Outputs, changelog or offsets could not be committed; the uncommitted work must be redone."""


class ProducerStuck(CheckpointFailed):
    """A transactional call did not return by its deadline: the producer can take no further call (librdkafka
    refuses a second one while the first is in progress) and must be replaced."""

"""Errors raised by the embedded infrastructure tooling, each naming what is wrong and how to fix it."""

from kafka_rekey.services.cli.errors import CommandError


class EmbeddedInfraError(CommandError):
    """Base class: the message is meant to be shown to the user as it is."""


class ToolMissing(EmbeddedInfraError):
    pass


class PortInUse(EmbeddedInfraError):
    pass


class NotReady(EmbeddedInfraError):
    pass

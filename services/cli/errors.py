"""The exit codes of every `rekey` command, and the project's user-facing errors turned into a one-line message
and one of them, not a traceback."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator

import typer

from kafka_rekey.services.console import make_console


class ExitCode(enum.IntEnum):
    """What a `rekey` command's exit status means, the same for every command (README, "Exit codes")."""

    OK = 0  # done; a check found nothing
    FAILED = 1  # what was asked could not be done: Kafka or the registry out of reach or refusing, a run failed
    USAGE = 2  # a bad argument, option, setting, catalog or file (click's own usage errors exit 2 as well)
    PROBLEM_FOUND = 3  # a check, verification or status ran to its end and found a problem


class CommandError(RuntimeError):
    """An error whose message is meant for the user as it is (a missing tool, a port in use): `user_errors` shows
    it in one line with the command's exit code. Tooling that plugs commands into `rekey` raises subclasses."""


# The exception types are imported when an error is being handled, not when the CLI starts: pydantic and the
# clients they come with would add a third of a second to every command.


def _fail(error: Exception, exit_code: int, message: str | None = None) -> typer.Exit:
    make_console(stderr=True).print(f"[bold red]error:[/] {message or error}", highlight=False)
    return typer.Exit(exit_code)


@contextlib.contextmanager
def infrastructure_errors() -> Iterator[None]:
    """Kafka or the registry out of reach: one line and exit 1 (FAILED), whatever the command."""
    try:
        yield
    except Exception as error:
        from kafka_rekey.services.kafka.errors import KafkaUnreachable
        from kafka_rekey.services.registry.errors import RegistryUnavailable

        if isinstance(error, KafkaUnreachable | RegistryUnavailable):
            raise _fail(error, ExitCode.FAILED) from error
        raise


@contextlib.contextmanager
def settings_errors() -> Iterator[None]:
    """An environment variable that does not validate, or a needed one unset: one line naming it, exit 2 (USAGE)."""
    try:
        yield
    except ValueError as error:
        from pydantic import ValidationError

        from kafka_rekey.services.settings import MissingSetting, describe_invalid_settings

        if isinstance(error, ValidationError):
            raise _fail(error, ExitCode.USAGE, describe_invalid_settings(error)) from error
        if isinstance(error, MissingSetting):
            raise _fail(error, ExitCode.USAGE) from error
        raise
    except Exception as error:
        from confluent_kafka import KafkaError, KafkaException

        if isinstance(error, KafkaException) and error.args and error.args[0].code() == KafkaError._INVALID_ARG \
                and error.args[0].str().startswith("Failed to create"):
            # librdkafka refused a client property (a CA file that is not a certificate, an unknown property
            # in the properties file): its message names the property.
            raise _fail(error, ExitCode.USAGE, f"Kafka client settings refused: {error.args[0].str()} (see the "
                                               "REKEY_KAFKA_* settings and REKEY_KAFKA_PROPERTIES_FILE)") from error
        raise


@contextlib.contextmanager
def user_errors(exit_code: int = ExitCode.USAGE) -> Iterator[None]:
    """A bad argument, setting or file: one line and `exit_code`; an unreachable service: one line and exit 1."""
    with infrastructure_errors():
        try:
            with settings_errors():  # inside: pydantic's ValidationError is a ValueError
                yield
        except (ValueError, FileNotFoundError) as error:
            raise _fail(error, exit_code) from error
        except Exception as error:
            from confluent_kafka import KafkaError, KafkaException

            if isinstance(error, CommandError):
                raise _fail(error, exit_code) from error
            if isinstance(error, KafkaException) and error.args and error.args[0].code() in (
                    KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED,
                    KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                # A topic that is not there, or an ACL that does not let this principal at it: configuration.
                raise _fail(error, exit_code, f"Kafka refused: {error.args[0].str()}") from error
            raise

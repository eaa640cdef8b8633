"""Turn the project's user-facing errors into a one-line message and a non-zero exit, not a traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer
from rich.console import Console

from services.embedded.errors import EmbeddedInfraError

USER_ERRORS: tuple[type[Exception], ...] = (EmbeddedInfraError, ValueError, FileNotFoundError)
_stderr = Console(stderr=True)


@contextlib.contextmanager
def user_errors(exit_code: int = 2) -> Iterator[None]:
    try:
        yield
    except USER_ERRORS as error:
        _stderr.print(f"[bold red]error:[/] {error}", highlight=False)
        raise typer.Exit(exit_code) from error

"""The consoles every command prints through: rich on a terminal, unwrapped plain lines in a pipe or a file.

Rich sizes its output to 80 columns when the stream is not a terminal, which cut table headers (`strat…`) and
broke error messages over several lines in logs; a redirected command now prints at a width no table reaches,
without hard line breaks. Commands that print tables take `--output json` (`OutputOption`) for scripts."""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

PIPED_WIDTH = 1000


def make_console(stderr: bool = False) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPED_WIDTH, soft_wrap=True, color_system=None)


class Output(StrEnum):
    table = "table"
    json = "json"


OutputOption = Annotated[Output, typer.Option(
    "--output", "-o", help="`table` for people, `json` (one object on stdout) for scripts.")]


def print_json(document: object) -> None:
    """One JSON document on stdout (dataclasses as dicts), nothing else: what `-o json` promises scripts."""
    typer.echo(json.dumps(document, default=_plain, sort_keys=True))


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")

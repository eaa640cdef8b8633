"""Schema ids remembered across restarts, so a worker restarted while the schema registry is out of reach starts
on the ids it registered before instead of crash-looping until the registry returns.

Every successful registration is kept in `schema-ids.json` in the worker's state directory (written to a
temporary file, then renamed over it). When a registration finds the registry unreachable, the id remembered
for the same registry URL, the same subject and the same schema text is used; a changed schema, another subject
or another registry (or a state directory that never registered it) still needs the registry. `recall` is that
rule, without I/O; `SchemaIdMemory` reads and writes the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import structlog

log = structlog.get_logger()

FILE_NAME = "schema-ids.json"


@dataclass(frozen=True)
class Remembered:
    registry: str
    subject: str
    schema_sha256: str
    """Of the schema's text as registered (`shared.avro.schema_text`)."""
    schema_id: int


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def recall(entries: Iterable[Remembered], registry: str, subject: str, text: str) -> int | None:
    """The id `registry` gave exactly this schema text under `subject`; None for anything else."""
    wanted = (registry, subject, fingerprint(text))
    return next((e.schema_id for e in entries if (e.registry, e.subject, e.schema_sha256) == wanted), None)


def remember(entries: Iterable[Remembered], new: Remembered) -> list[Remembered]:
    """`entries` with `new` in place of what they held for its registry, subject and schema text."""
    same = (new.registry, new.subject, new.schema_sha256)
    return [e for e in entries if (e.registry, e.subject, e.schema_sha256) != same] + [new]


class SchemaIdMemory:
    """The remembered ids of one state directory (`SchemaRegistryClient(..., memory=...)` uses and feeds it)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / FILE_NAME
        self.entries = self._read()

    def recall(self, registry: str, subject: str, text: str) -> int | None:
        return recall(self.entries, registry, subject, text)

    def remember(self, registry: str, subject: str, text: str, schema_id: int) -> None:
        """Keep a successful registration; a file that cannot be written only costs the fallback (a warning)."""
        if self.recall(registry, subject, text) == schema_id:
            return
        entries = remember(self.entries, Remembered(registry, subject, fingerprint(text), schema_id))
        try:
            self._write(entries)
        except OSError as error:
            log.warning("schema id not remembered", path=str(self.path), subject=subject, error=str(error))
            return
        self.entries = entries

    def _write(self, entries: list[Remembered]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{FILE_NAME}.")
        try:
            with os.fdopen(descriptor, "w") as out:
                json.dump({"schemas": [asdict(e) for e in entries]}, out, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except OSError:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _read(self) -> list[Remembered]:
        try:
            document = json.loads(self.path.read_text())
            return [Remembered(**entry) for entry in document["schemas"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError, KeyError) as error:  # rewritten at the next registration
            log.warning("remembered schema ids unreadable, ignored", path=str(self.path), error=str(error))
            return []

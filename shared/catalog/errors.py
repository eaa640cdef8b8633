"""The catalog's error: one line per problem, each naming the file, the topic/family/source and the field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a catalog. `where` is e.g. `topic 'x_v1'`, or empty for a top-level field."""

    where: str
    field: str
    message: str

    def render(self, source: str) -> str:
        parts = [source, *([self.where] if self.where else []), *([self.field] if self.field else []), self.message]
        return ": ".join(parts)


class CatalogError(ValueError):
    """The catalog could not be read or is inconsistent; `problems` lists every finding."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(problem.render(source) for problem in problems))

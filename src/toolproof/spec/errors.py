"""Errors for people: every problem names the file, the line, the field and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file.

    Attributes:
        file: The file the problem is in (``None`` for inputs that have no file).
        line: 1-based line number, when known.
        field: Dotted path to the offending field, e.g. ``success[0].equals``.
        message: What is wrong and how to fix it.
    """

    file: Path | None
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(f"{self.file}:{self.line}" if self.line is not None else str(self.file))
        if self.field:
            parts.append(self.field)
        return ": ".join([*parts, self.message])


class ToolproofError(Exception):
    """Base of every error toolproof raises on purpose; the CLI prints it without a traceback."""


class SpecError(ToolproofError):
    """One or more problems in a suite, task or agent specification."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

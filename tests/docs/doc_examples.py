"""The shell examples of README.md and docs/*.md, as the doc-examples test runs them.

An example is a fenced block whose language is ``bash``, ``console``, ``sh`` or
``shell``. The HTML comment ``<!-- doc-test: skip (WHY) -->`` on the line just before
its fence (blank lines between are allowed) marks one that needs an outside service,
installs packages, or cannot run in a test; ``<!-- doc-test: exit N (WHY) -->`` one whose
commands may also exit N (a gate that fails on purpose); ``<!-- doc-test: file NAME -->``
before any block makes its text the file NAME in the folder of every later example of
the document (an evaluation file, say). Every example not skipped is
run, command by command, in a temporary folder. In ``console`` blocks the commands are
the lines after ``$ `` (the rest is output); in the others every line that is not a
comment, joined across trailing backslashes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("bash", "console", "sh", "shell")
FILE = re.compile(r"<!--\s*doc-test:\s*file\s+(?P<name>[A-Za-z0-9_.-]+)\s*-->")
MARKER = re.compile(
    r"<!--\s*doc-test:\s*(?:(?P<skip>skip)|exit\s+(?P<exit>\d+))\s*\((?P<why>[^)]+)\)\s*-->"
)
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[A-Za-z]*)\s*$")


@dataclass(frozen=True)
class Example:
    """One shell example of a document."""

    file: Path
    line: int
    lang: str
    commands: tuple[str, ...]
    skip: str | None
    exits: tuple[int, ...] = (0,)
    files: tuple[tuple[str, str], ...] = ()
    """(name, text) of the files the document defined before this example."""

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    """README.md and every docs/*.md (not docs/dev: notes for maintainers)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _commands(lang: str, body: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    pending = ""
    for raw in body:
        line = raw.rstrip()
        if lang == "console":
            if pending:
                text = line.strip()
            elif line.lstrip().startswith("$ "):
                text = line.lstrip()[2:]
            else:
                continue
        else:
            text = line.strip()
            if not pending and (not text or text.startswith("#")):
                continue
        if text.endswith("\\"):
            pending += text[:-1].rstrip() + " "
            continue
        out.append((pending + text).strip())
        pending = ""
    return tuple(c for c in out if c)


def examples(file: Path) -> list[Example]:
    """The shell examples of ``file``, in order."""
    lines = file.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    files: dict[str, str] = {}
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None or not match["lang"]:
            if match is not None:  # a fence without a language: skip to its end
                i += 1
                while i < len(lines) and not FENCE.match(lines[i]):
                    i += 1
            i += 1
            continue
        lang, start = match["lang"], i
        body: list[str] = []
        i += 1
        while i < len(lines) and not (FENCE.match(lines[i]) and not FENCE.match(lines[i])["lang"]):
            body.append(lines[i])
            i += 1
        i += 1
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        named = FILE.search(lines[before]) if before >= 0 else None
        if named is not None:
            files[named["name"]] = "\n".join(body) + "\n"
        if lang not in LANGS:
            continue
        marker = MARKER.search(lines[before]) if before >= 0 else None
        skip = marker["why"] if marker and marker["skip"] else None
        exits = (0, int(marker["exit"])) if marker and marker["exit"] else (0,)
        found.append(
            Example(file, start + 1, lang, _commands(lang, body), skip, exits, tuple(files.items()))
        )
    return found


def all_examples() -> list[Example]:
    """Every shell example of every document."""
    return [e for doc in documents() for e in examples(doc)]

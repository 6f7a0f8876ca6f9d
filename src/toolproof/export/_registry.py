"""Export formats by name: ``@exporter("csv", ".csv", "...")`` next to each writer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from toolproof.spec.errors import ToolproofError

if TYPE_CHECKING:
    from ._source import RunSource

Writer = Callable[["RunSource", IO[bytes]], int]
"""Writes a run to a binary file; returns how many episodes it wrote."""


class ExportError(ToolproofError):
    """An export cannot be made (an unknown format, a missing optional package)."""


@dataclass(frozen=True)
class Format:
    """One export format.

    Attributes:
        name: What ``--format`` takes.
        suffix: The file name's ending.
        help: One line for ``--help`` and the viewer.
        write: The writer.
        media_type: The HTTP content type the viewer serves it with.
    """

    name: str
    suffix: str
    help: str
    write: Writer
    media_type: str


FORMATS: dict[str, Format] = {}
"""Every format, by name (filled as the writers' modules are imported)."""

MEDIA_TYPES = {
    ".csv": "text/csv; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".xml": "application/xml",
}


def exporter(name: str, suffix: str, help: str) -> Callable[[Writer], Writer]:
    """Register a writer under ``name``.

    Raises:
        ValueError: the name is taken.
    """

    def register(write: Writer) -> Writer:
        if name in FORMATS:
            raise ValueError(f"export format {name!r} is registered twice")
        media = MEDIA_TYPES.get(suffix, "application/octet-stream")
        FORMATS[name] = Format(name, suffix, help, write, media)
        return write

    return register

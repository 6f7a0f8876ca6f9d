"""Exports of a run folder to the formats people already look at.

Map::

    run_dir ──RunSource (RunReader: records one at a time, rows in pages)──▶ writer ──▶ file
      inspect   Inspect AI eval log (JSON)         _inspect.py
      otel      OTLP JSON spans, GenAI conventions _otel.py
      csv       one row per episode                _table.py
      parquet   one row per episode (pyarrow)      _table.py
      junit     JUnit XML, one case per episode    _junit.py

Beside ``report`` and ``viewer`` in the layers: it reads run folders through
``toolproof.results`` and never imports the engine. Every writer streams, so a run of
any size exports in bounded memory. ``toolproof export RUN --format F`` and the viewer's
``/api/runs/RUN/export/F`` both call :func:`export_run`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import IO

from . import _inspect, _junit, _otel, _table  # noqa: F401  (they register their formats)
from ._registry import FORMATS, ExportError, Format
from ._source import RunSource


def get_format(name: str) -> Format:
    """The format called ``name``.

    Raises:
        ExportError: no such format (listing the valid ones).
    """
    try:
        return FORMATS[name]
    except KeyError:
        valid = ", ".join(sorted(FORMATS))
        raise ExportError(f"unknown export format {name!r}; valid: {valid}") from None


def default_name(run_dir: Path, format: str) -> str:
    """The file name an export of ``run_dir`` gets when none is given.

    The Inspect log is named as Inspect names its own (``TIMESTAMP_TASK_ID.json``): Inspect
    lists only JSON logs whose names start with a timestamp. The timestamp is when the
    run's database was last written, so the same run gets the same name.
    """
    fmt = get_format(format)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_dir.resolve().name)[:80] or "run"
    if fmt.name != "inspect":
        return f"{slug}{fmt.suffix}"
    with RunSource.open(run_dir) as source:
        stamp = source.created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
        task = re.sub(r"[^A-Za-z0-9.-]+", "-", source.suite_name)[:60] or "run"
        return f"{stamp}_{task}_{source.run_id}{fmt.suffix}"


def export_run(run_dir: Path, format: str, out: IO[bytes]) -> tuple[int, list[str]]:
    """Write the run in ``run_dir`` to ``out`` in ``format``.

    Returns:
        How many episodes were written, and the keys of episodes left out because their
        trajectory could not be read back (a damaged ``trajectories.jsonl``).

    Raises:
        ExportError: an unknown format or a missing optional package.
        FileNotFoundError: the folder holds no run.
        RunDirError: the run's database is damaged.
    """
    fmt = get_format(format)
    with RunSource.open(run_dir) as source:
        count = fmt.write(source, out)
        return count, list(source.damaged)


__all__ = [
    "FORMATS",
    "ExportError",
    "Format",
    "RunSource",
    "default_name",
    "export_run",
    "get_format",
]

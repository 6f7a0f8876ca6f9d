"""The runs the viewer shows: run directories found under one folder.

A run is a directory holding ``run.db``. Its id is its name (the folder itself,
when it is a run, is listed under its own name too). Ids come only from this
scan, so a request can never name a path outside the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolproof.results import DB_NAME

from ._compare import CompareCache
from ._overview import OverviewCache


class RunCatalog:
    """Run directories under ``root`` and their cached overviews."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.overviews = OverviewCache()
        self.comparisons = CompareCache()

    def runs(self) -> dict[str, Path]:
        """Run id to directory, newest first."""
        found: list[Path] = []
        if (self.root / DB_NAME).is_file():
            found.append(self.root)
        if self.root.is_dir():
            found.extend(p for p in self.root.iterdir() if (p / DB_NAME).is_file())
        found.sort(key=lambda p: ((p / DB_NAME).stat().st_mtime, p.name), reverse=True)
        return {p.name: p for p in found}

    def path(self, run_id: str) -> Path | None:
        """The directory of a run, or None when no such run is listed."""
        return self.runs().get(run_id)

    def card(self, run_id: str, path: Path) -> dict[str, Any]:
        """One line of the runs list."""
        view = self.overviews.get(path)
        return {
            "id": run_id,
            "suite": view["suite"].get("name"),
            "suite_version": view["suite"].get("version"),
            "agent": view["agent"],
            "track": view["track"],
            "started_at": view["started_at"],
            "finished": view["finished"],
            "episodes": view["episodes"],
            "success": view["success"],
            "cost_usd": view["totals"]["cost_usd"],
            "tokens": view["totals"]["input_tokens"] + view["totals"]["output_tokens"],
        }

    def cards(self) -> list[dict[str, Any]]:
        """The runs list; a run that cannot be read is listed with its error."""
        out = []
        for run_id, path in self.runs().items():
            try:
                out.append(self.card(run_id, path))
            except Exception as exc:  # a broken or half-written run must not hide the others
                out.append({"id": run_id, "error": f"{type(exc).__name__}: {exc}"})
        return out

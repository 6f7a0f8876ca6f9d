"""Trajectories as JSON Lines: one episode per line, versioned."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from .types import FORMAT_VERSION, Trajectory


def dumps(trajectory: Trajectory) -> str:
    """One JSON line (no trailing newline)."""
    return trajectory.model_dump_json(exclude_none=False)


def loads(line: str) -> Trajectory:
    """Parse one line.

    Raises:
        ValueError: the line has a newer format version than this toolproof reads.
    """
    trajectory = Trajectory.model_validate_json(line)
    if trajectory.format_version > FORMAT_VERSION:
        raise ValueError(
            f"trajectory format {trajectory.format_version} is newer than {FORMAT_VERSION}; "
            "upgrade toolproof"
        )
    return trajectory


def write(path: Path, trajectories: Iterable[Trajectory]) -> None:
    """Write trajectories to a JSONL file, replacing it atomically."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for trajectory in trajectories:
            fh.write(dumps(trajectory) + "\n")
    tmp.replace(path)


def read(path: Path) -> Iterator[Trajectory]:
    """Read trajectories from a JSONL file, skipping a torn last line."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    yield loads(line)
                except ValueError:
                    if line.endswith("\n"):
                        raise

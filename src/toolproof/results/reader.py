"""Read-only access to a run directory (reports, metrics, the viewer; never the engine).

An episode whose record cannot be read back (its trajectory line cut short, edited,
not UTF-8, holding a lone surrogate escape) is a :class:`DamagedRecord` naming the file
and the episode, never a traceback; ``run --resume`` runs such episodes again.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._format import (
    DB_NAME,
    SUMMARY,
    TRAJECTORIES,
    RunDirError,
    check,
    has_offsets,
    index_lines,
    is_line_of,
    join_record,
    unreadable,
)
from .indexes import search_count, search_current

if TYPE_CHECKING:
    from .record import EpisodeRecord


class DamagedRecord(RunDirError):
    """One stored episode cannot be read back (its trajectory line is missing or damaged).

    Attributes:
        key: The episode's key.
        why: What is wrong with it.
    """

    def __init__(self, path: Path, key: str, why: str) -> None:
        super().__init__(
            f"{path}: the trajectory of episode {key!r} cannot be read: {why}. The file was "
            "cut short, edited or deleted; its scores are still in run.db. "
            f"`toolproof run --resume {path.parent}` runs the episode again; or restore the "
            "file from a copy"
        )
        self.key = key
        self.why = why


class TrajectoryFile:
    """Reads trajectory lines of ``trajectories.jsonl`` by offset, checking each is its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._index: dict[str, tuple[int, int]] | None = None

    def read(self, key: str, offset: int, length: int) -> bytes:
        """The trajectory line of ``key`` (at ``offset``, or found again by its key).

        Raises:
            RunDirError: the line is not in the file (deleted or cut short).
        """
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError as exc:
                raise self._missing(key, f"cannot open it ({exc.strerror})") from None
        line = os.pread(self._fd, length, offset)
        if is_line_of(key, line):
            return line
        if self._index is None:  # offsets of another layout (a finalize cut short): find it
            self._index = index_lines(self.path)
        where = self._index.get(key)
        if where is not None:
            line = os.pread(self._fd, where[1], where[0])
            if is_line_of(key, line):
                return line
        raise self._missing(key, "its line is missing")

    def _missing(self, key: str, why: str) -> DamagedRecord:
        return DamagedRecord(self.path, key, why)

    def close(self) -> None:
        """Close the file; idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class RunReader:
    """Read-only access to a run directory."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        db = run_dir / DB_NAME
        if not db.is_file():
            raise FileNotFoundError(f"{run_dir} is not a toolproof run (no {DB_NAME})")
        self._db = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
        check(db, self._db, full=False)
        try:
            self._db.execute("SELECT COUNT(*) FROM meta").fetchone()
            where = "traj_offset, traj_length" if has_offsets(self._db) else "NULL, NULL"
        except sqlite3.Error as exc:
            self._db.close()
            raise unreadable(db, exc) from None
        self._where = where
        self._lines = TrajectoryFile(run_dir / TRAJECTORIES)

    def meta(self) -> dict[str, Any]:
        """Everything the run recorded about itself (config, suite, versions)."""
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def count(self, *, where: str = "", params: tuple[Any, ...] = ()) -> int:
        """Number of stored episodes (matching ``where``, as in :meth:`rows`)."""
        sql = "SELECT COUNT(*) FROM episodes" + (f" WHERE {where}" if where else "")
        (n,) = self._db.execute(sql, params).fetchone()
        return int(n)

    def search_ready(self) -> bool:
        """Whether the run's search index is current (:func:`.indexes.search_current`)."""
        return search_current(self._db)

    def search_count(self, phrase: str) -> int:
        """How many episodes the search index matches for an FTS5 ``phrase``."""
        return search_count(self._db, phrase)

    def keys(self) -> set[str]:
        """Keys of the stored episodes."""
        return {k for (k,) in self._db.execute("SELECT key FROM episodes")}

    def _full(self, key: str, text: str, offset: int | None, length: int | None) -> EpisodeRecord:
        """The stored record of ``key``, its trajectory line put back.

        Raises:
            DamagedRecord: the line is missing, not UTF-8 or not a record (a lone surrogate
                escape included).
        """
        from .record import EpisodeRecord  # on first use: the rows alone need no models

        try:
            if offset is None or length is None:  # a schema-1 row: the trajectory is inline
                return EpisodeRecord.model_validate_json(text)
            line = self._lines.read(key, offset, length)
            return EpisodeRecord.model_validate_json(join_record(text, line))
        except ValueError as exc:  # UnicodeDecodeError, pydantic's ValidationError
            first = str(exc).splitlines()[:2]
            why = " ".join(first).encode("ascii", "backslashreplace").decode("ascii")[:300]
            raise DamagedRecord(self.run_dir / TRAJECTORIES, key, why) from None

    def records(
        self, damaged: Callable[[DamagedRecord], None] | None = None
    ) -> Iterator[EpisodeRecord]:
        """Every episode, in task and epoch order (one at a time: memory stays flat).

        Args:
            damaged: Told each episode that cannot be read back, which is then left out;
                None: such an episode raises.

        Raises:
            DamagedRecord: an episode cannot be read back (without ``damaged``).
        """
        sql = f"SELECT key, record, {self._where} FROM episodes ORDER BY task_id, epoch"
        for key, text, offset, length in self._db.execute(sql):
            try:
                record = self._full(key, text, offset, length)
            except DamagedRecord as exc:
                if damaged is None:
                    raise
                damaged(exc)
                continue
            yield record

    def record(self, key: str) -> EpisodeRecord | None:
        """One episode by key, or None.

        Raises:
            DamagedRecord: it cannot be read back.
        """
        row = self._db.execute(
            f"SELECT record, {self._where} FROM episodes WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return self._full(key, *row)

    def rows(
        self,
        *,
        where: str = "",
        params: tuple[Any, ...] = (),
        order: str = "task_id, epoch",
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Episode rows without the full record (for tables and paging)."""
        columns = (
            "key, task_id, epoch, passed, level, termination, fraction, n_steps, n_tool_calls, "
            "duration_s, input_tokens, output_tokens, cost_usd, category, type, difficulty, "
            "failure_mode"
        )
        sql = f"SELECT {columns} FROM episodes"
        if where:
            sql += f" WHERE {where}"
        sql += f" ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        cursor = self._db.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]

    def summary(self) -> dict[str, Any] | None:
        """The summary.json of a finished run, or None."""
        path = self.run_dir / SUMMARY
        return json.loads(path.read_text()) if path.is_file() else None

    def close(self) -> None:
        """Close the database and the trajectories file."""
        self._lines.close()
        self._db.close()

    def __enter__(self) -> RunReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DamagedRecord", "RunDirError", "RunReader", "TrajectoryFile"]

"""The run directory on disk: ``run.db`` (SQLite), ``trajectories.jsonl``, ``summary.json``.

The engine appends through :class:`RunStore`; reports, metrics and the viewer
read through :class:`~toolproof.results.reader.RunReader` and never need the engine.

Each episode's trajectory is written once, as a line of ``trajectories.jsonl``; its
``run.db`` row holds the rest of the record and the line's offset (see ``_format``).
An append encodes the whole record first (a record that cannot be written, say a lone
surrogate that UTF-8 cannot encode or a number SQLite cannot hold, is refused with
:class:`UnstorableRecord` before anything is written, so the run can store a stand-in
for that one episode and go on), then writes the line and keeps the row; every
``commit_every`` appends (and at :meth:`RunStore.commit`) the file is flushed, then the
kept rows are inserted, a few dozen a statement, and committed in one transaction, so a
committed row always points at a line on disk. A line without
a committed row (a run killed between the two) is cut off when the store is opened
again: resume runs that episode again.

A run folder that cannot be written (read-only, not a folder, no space left) is a
:class:`RunDirError` naming the path and the cause (the CLI exits 2 with it), never a
traceback.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import sqlite3
from pathlib import Path
from typing import Any

from ._format import (
    DB_NAME,
    SCHEMA,
    SCHEMA_VERSION,
    SUMMARY,
    TRAJECTORIES,
    RunDirError,
    check,
    has_offsets,
    index_lines,
    is_line_of,
    trajectory_line,
    unreadable,
    unwritable,
)
from .indexes import add_indexes
from .lock import LOCK_NAME, RunLock, RunLockedError
from .reader import RunReader, TrajectoryFile
from .record import EpisodeRecord

_log = logging.getLogger(__name__)

__all__ = [
    "DB_NAME",
    "LOCK_NAME",
    "SCHEMA_VERSION",
    "SUMMARY",
    "TRAJECTORIES",
    "RunDirError",
    "RunLock",
    "RunLockedError",
    "RunReader",
    "RunStore",
    "UnstorableRecord",
    "encode_record",
]

_ROW = "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
_INSERT = f"INSERT OR REPLACE INTO episodes VALUES {_ROW}"
_CHUNK = 32
"""Rows inserted by one statement at commit (32 x 21 values: under SQLite's oldest limit of
999): one step of SQLite, and one release of the GIL, per 32 episodes instead of each."""
_INSERT_CHUNK = f"INSERT OR REPLACE INTO episodes VALUES {','.join([_ROW] * _CHUNK)}"
_LINES_BUFFER = 1 << 20
"""Bytes of trajectory lines held before they are written: a batch's lines reach the file
in a write or two at its commit, not one every other episode (each write releases the GIL,
which a thousand agents' threads then contend for)."""
_NULLABLE = frozenset({11, 15})
"""Columns of :func:`encode_record`'s row that may be NULL: cost_usd, failure_mode."""


class UnstorableRecord(ValueError):
    """One episode's record cannot be written (nothing of it was): the run stores a stand-in.

    Attributes:
        key: The episode's key.
    """

    def __init__(self, key: str, cause: BaseException) -> None:
        text = f"{type(cause).__name__}: {cause}".encode("utf-8", "backslashreplace")
        super().__init__(f"episode {key!r} cannot be stored: {text.decode('utf-8')[:500]}")
        self.key = key


_SQLITE_INT = 2**63 - 1


def encode_record(record: EpisodeRecord) -> tuple[bytes, tuple[Any, ...]]:
    """What :meth:`RunStore.append` writes of a record: its trajectory line and the row's
    columns (without ``seq`` and the line's offset).

    The row is checked in full here (every value one SQLite binds, NULL only where the
    column allows it), so that its insert, made later with its batch's, cannot fail for it.

    Raises:
        UnstorableRecord: it cannot be encoded (a lone surrogate, which UTF-8 cannot
            encode), or a column holds what SQLite cannot (an integer past 64 bits, a
            number that is not finite, a NULL where the column has none, another type).
    """
    try:
        line, row = _encoded(record)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise UnstorableRecord(record.key, exc) from None
    if not isinstance(record.key, str):  # the row's key, bound beside the columns
        raise UnstorableRecord(str(record.key), TypeError("the episode key is not a str"))
    for column, value in enumerate(row):
        if isinstance(value, str):
            continue
        if isinstance(value, int):
            if not -_SQLITE_INT <= value <= _SQLITE_INT:
                raise UnstorableRecord(record.key, OverflowError(f"{value} does not fit SQLite"))
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise UnstorableRecord(record.key, ValueError(f"{value} is not a finite number"))
        elif value is None:
            if column not in _NULLABLE:
                raise UnstorableRecord(record.key, ValueError(f"column {column} is None"))
        else:  # what SQLite cannot bind (a record built without validation)
            raise UnstorableRecord(record.key, TypeError(f"{type(value).__name__} in a column"))
    return line, row


def _encoded(record: EpisodeRecord) -> tuple[bytes, tuple[Any, ...]]:
    score, traj = record.score, record.trajectory
    usage = traj.usage()
    line = trajectory_line(traj.model_dump_json(), score.model_dump_json())
    row = (
        record.task.id,
        record.epoch,
        int(score.passed),
        score.level.value,
        score.termination.value,
        score.fraction,
        len(traj.steps),
        score.tool_calls,
        traj.duration_s,
        usage.input_tokens,
        usage.output_tokens,
        usage.cost_usd,
        record.task.category,
        record.task.type,
        record.task.difficulty,
        score.failure_mode,
        record.model_dump_json(exclude={"trajectory"}),
    )
    return line, row


class RunStore:
    """Append-only writer of a run directory.

    Opening one takes the directory's :class:`RunLock` (until :meth:`close`).

    Args:
        run_dir: The run directory (made when missing).
        commit_every: Appends per SQLite commit. 1 (the default) commits each episode
            as it is appended; the runner batches and commits at least every fraction of
            a second, so a kill loses (and a resume reruns) only the last few episodes.

    Raises:
        RunLockedError: Another process is writing to the directory.
        RunDirError: an existing ``run.db`` is damaged (checked in full before anything is
            written, so a resume refuses at once and the file is left as it was).
    """

    def __init__(self, run_dir: Path, *, commit_every: int = 1) -> None:
        self.run_dir = run_dir
        self.commit_every = max(1, commit_every)
        self._pending = 0
        self._rows: list[tuple[Any, ...]] = []
        """Rows of the appends since the last commit, inserted by :meth:`commit`."""
        self._lock = RunLock(run_dir).acquire()
        try:
            self._open()
        except BaseException:
            self._lock.release()
            raise

    def _open(self) -> None:
        run_dir = self.run_dir
        db = run_dir / DB_NAME
        try:
            self._db = sqlite3.connect(db, check_same_thread=False)
        except sqlite3.Error as exc:  # the file cannot be made or opened
            raise unwritable(db, exc) from None
        check(db, self._db, full=True)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            if not has_offsets(self._db):  # a schema-1 run being resumed
                self._db.execute("ALTER TABLE episodes ADD COLUMN traj_offset INTEGER")
                self._db.execute("ALTER TABLE episodes ADD COLUMN traj_length INTEGER")
                self._db.commit()
            (seq,) = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM episodes").fetchone()
            self._seq = int(seq)
            self._repair()
        except (sqlite3.OperationalError, OSError) as exc:
            self._db.close()
            if _cannot_write(exc):
                raise unwritable(db, exc) from None
            if isinstance(exc, OSError):
                raise unwritable(run_dir / TRAJECTORIES, exc) from None
            raise unreadable(db, exc) from None
        except sqlite3.Error as exc:
            self._db.close()
            raise unreadable(db, exc) from None
        self._path = run_dir / TRAJECTORIES
        try:
            self._jsonl = self._path.open("ab", buffering=_LINES_BUFFER)
        except OSError as exc:
            self._db.close()
            raise unwritable(self._path, exc) from None
        self._size = self._jsonl.tell()

    def _repair(self) -> None:
        """Make the trajectories file and the offsets agree after a crash.

        Lines after the last committed one belong to episodes whose rows were never
        committed: they are cut off (those episodes run again on resume). Offsets that
        point at another episode's line (a finalize stopped after replacing the file)
        are found again by key.
        """
        path = self.run_dir / TRAJECTORIES
        size = path.stat().st_size if path.is_file() else 0
        last = self._db.execute(
            "SELECT key, traj_offset, traj_length FROM episodes WHERE traj_offset IS NOT NULL "
            "ORDER BY traj_offset DESC LIMIT 1"
        ).fetchone()
        if last is None:
            (rows,) = self._db.execute("SELECT COUNT(*) FROM episodes").fetchone()
            if rows == 0 and size:  # nothing committed: every line is an orphan
                os.truncate(path, 0)
            return
        key, offset, length = last
        line = b""
        if path.is_file():  # a missing file lost every line: all its episodes run again
            with path.open("rb") as fh:
                fh.seek(offset)
                line = fh.read(length)
        if not is_line_of(key, line):
            found = index_lines(path)
            self._db.executemany(
                "UPDATE episodes SET traj_offset = ?, traj_length = ? WHERE key = ?",
                [(o, n, k) for k, (o, n) in found.items()],
            )
            lost = [
                k
                for (k,) in self._db.execute(
                    "SELECT key FROM episodes WHERE traj_offset IS NOT NULL"
                )
                if k not in found
            ]
            if lost:  # the file lost their lines (cut short or edited): they run again
                _log.warning(
                    "%s: %d episode(s) lost their trajectory line (%s); they are dropped from "
                    "run.db and run again on resume",
                    path,
                    len(lost),
                    ", ".join(lost[:5]) + (" ..." if len(lost) > 5 else ""),
                )
                self._db.executemany("DELETE FROM episodes WHERE key = ?", [(k,) for k in lost])
            self._db.commit()
            (end,) = self._db.execute(
                "SELECT MAX(traj_offset + traj_length) FROM episodes"
            ).fetchone()
        else:
            end = offset + length
        if end is not None and size > end:
            os.truncate(path, end)

    def set_meta(self, values: dict[str, Any]) -> None:
        """Record run facts (config, suite digest, versions); committed at once."""
        self._db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [(k, json.dumps(v, sort_keys=True)) for k, v in values.items()],
        )
        self._pending += 1
        self.commit()

    def meta(self) -> dict[str, Any]:
        """The recorded run facts."""
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def keys(self) -> set[str]:
        """Keys of the finished episodes."""
        return {k for (k,) in self._db.execute("SELECT key FROM episodes")}

    @property
    def pending(self) -> int:
        """Appends not committed yet."""
        return self._pending

    def append(self, record: EpisodeRecord) -> None:
        """Store one finished episode: its trajectory line now, its row at the next commit
        (see ``commit_every``).

        Raises:
            UnstorableRecord: the record cannot be encoded, or holds a value SQLite cannot
                hold; nothing of it was written.
            RunDirError: the run folder cannot be written (the run cannot go on).
        """
        line, row = encode_record(record)
        try:
            self._jsonl.write(line)
        except OSError as exc:  # no row may point at a line that is not there: none is kept
            self._db.rollback()
            self._rows.clear()
            self._pending = 0
            raise unwritable(self._path, exc) from None
        self._seq += 1
        self._rows.append((record.key, self._seq, *row, self._size, len(line)))
        self._size += len(line)
        self._pending += 1
        if self._pending >= self.commit_every:
            self.commit()

    def commit(self) -> None:
        """Commit the pending appends: the trajectory lines reach the file, then their rows
        are inserted and committed in one transaction.

        Raises:
            RunDirError: the run folder cannot be written (what is pending stays pending:
                nothing of it is committed).
        """
        if not self._pending:
            return
        try:
            self._jsonl.flush()
        except OSError as exc:
            raise unwritable(self._path, exc) from None
        try:
            self._insert(self._rows)
            self._db.commit()
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.rollback()  # a batch half inserted is not left to a later commit
            raise unwritable(self.run_dir / DB_NAME, exc) from None
        self._rows.clear()
        self._pending = 0

    def _insert(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``rows``, :data:`_CHUNK` a statement."""
        whole = len(rows) - len(rows) % _CHUNK
        for start in range(0, whole, _CHUNK):
            chunk = rows[start : start + _CHUNK]
            self._db.execute(_INSERT_CHUNK, [value for row in chunk for value in row])
        if whole < len(rows):
            self._db.executemany(_INSERT, rows[whole:])

    def forget(self, keys: set[str]) -> None:
        """Drop the rows of these episodes (their trajectory lines become orphans, which
        :meth:`finalize` leaves out): they are run again. Committed at once."""
        self._db.executemany("DELETE FROM episodes WHERE key = ?", [(k,) for k in sorted(keys)])
        self._pending += 1
        self.commit()

    def finalize(self, summary: dict[str, Any]) -> None:
        """Put trajectories.jsonl in task order (same seed: same file); write summary.json.

        The lines are copied as bytes (nothing is parsed), and only when the file is
        not in order already (one in flight at a time, no episode replaced). Safe to
        repeat after a crash at any moment: the offsets move in the transaction that
        follows the file's replacement, an offset that does not match is found again
        by key (see :meth:`_repair`), and a leftover ``*.tmp`` file is overwritten.
        """
        self.commit()
        if not self._in_order():
            self._jsonl.close()
            self._rewrite()
            self._jsonl = self._path.open("ab", buffering=_LINES_BUFFER)
            self._size = self._jsonl.tell()
        # A finalize killed mid-rewrite leaves its temporary copy; the file it was for is whole.
        (self.run_dir / (TRAJECTORIES + ".tmp")).unlink(missing_ok=True)
        add_indexes(self._db)  # for readers that filter and search (the viewer)
        out = self.run_dir / (SUMMARY + ".tmp")
        try:
            out.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
            out.replace(self.run_dir / SUMMARY)
        except OSError as exc:
            raise unwritable(self.run_dir / SUMMARY, exc) from None

    def _in_order(self) -> bool:
        end = 0
        rows = self._db.execute(
            "SELECT traj_offset, traj_length FROM episodes ORDER BY task_id, epoch"
        )
        for offset, length in rows:
            if offset != end:
                return False
            end += length
        return end == self._size

    def _rewrite(self) -> None:
        tmp = self.run_dir / (TRAJECTORIES + ".tmp")
        lines = TrajectoryFile(self._path)
        read = sqlite3.connect(f"file:{self.run_dir / DB_NAME}?mode=ro", uri=True)
        moved: list[tuple[int, int, str]] = []
        try:
            with tmp.open("wb") as fh:
                sql = (
                    "SELECT key, record, traj_offset, traj_length FROM episodes "
                    "ORDER BY task_id, epoch"
                )
                for key, text, offset, length in read.execute(sql):
                    if offset is None:  # a schema-1 row: its trajectory is in the record
                        stored = json.loads(text)
                        trajectory = json.dumps(stored["trajectory"], separators=(",", ":"))
                        score = json.dumps(stored["score"], separators=(",", ":"))
                        fh.write(trajectory_line(trajectory, score))
                        continue
                    line = lines.read(key, offset, length)
                    moved.append((fh.tell(), len(line), key))
                    fh.write(line)
                    if len(moved) >= 1000:  # inside one transaction, committed after the swap
                        self._move(moved)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(self._path)
            self._move(moved)
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        finally:
            lines.close()
            read.close()

    def _move(self, moved: list[tuple[int, int, str]]) -> None:
        self._db.executemany(
            "UPDATE episodes SET traj_offset = ?, traj_length = ? WHERE key = ?", moved
        )
        moved.clear()

    def close(self) -> None:
        """Commit what is pending, close files; idempotent.

        Raises:
            RunDirError: what was pending could not be written (the files are closed).
        """
        try:
            if not self._jsonl.closed:
                try:
                    self.commit()
                finally:
                    with contextlib.suppress(OSError):  # what it could not write is lost
                        self._jsonl.close()
                # Back to a rollback journal: the run folder keeps no -wal/-shm files, which
                # a later read-only reader would otherwise recreate and, closing last, leave
                # behind (a reader still open keeps WAL: the change is skipped, nothing lost).
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("PRAGMA journal_mode=DELETE")
        finally:
            self._db.close()
            self._lock.release()


def _cannot_write(exc: BaseException) -> bool:
    """Whether an error opening a run means the folder or file cannot be written to."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.ENOTDIR)
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text

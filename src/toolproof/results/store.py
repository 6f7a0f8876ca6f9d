"""The run directory on disk: ``run.db`` (SQLite), ``trajectories.jsonl``, ``summary.json``.

The engine appends through :class:`RunStore`; reports, metrics and the viewer
read through :class:`RunReader` and never need the engine.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolproof.spec.errors import ToolproofError

from .indexes import add_indexes, search_count, search_current
from .record import EpisodeRecord

DB_NAME = "run.db"
TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
LOCK_NAME = "run.lock"
"""The lock file of a run directory: whoever holds its ``flock`` is the one writer."""
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    key TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    task_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    passed INTEGER NOT NULL,
    level TEXT NOT NULL,
    termination TEXT NOT NULL,
    fraction REAL NOT NULL,
    n_steps INTEGER NOT NULL,
    n_tool_calls INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd REAL,
    category TEXT NOT NULL,
    type TEXT NOT NULL,
    difficulty INTEGER NOT NULL,
    failure_mode TEXT,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    episode_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    step TEXT NOT NULL,
    PRIMARY KEY (episode_key, idx)
);
CREATE INDEX IF NOT EXISTS episodes_task ON episodes (task_id, epoch);
"""


class RunDirError(ToolproofError):
    """A run directory's ``run.db`` cannot be read: truncated, overwritten or not SQLite.

    Not an episode's infra error: the run as a whole refuses to go on (the CLI exits 2).
    """


def _unreadable(db: Path, exc: sqlite3.Error) -> RunDirError:
    jsonl = db.parent / TRAJECTORIES
    kept = (
        f"; the trajectories of its finished episodes are still in {jsonl}"
        if jsonl.is_file()
        else ""
    )
    return RunDirError(
        f"{db}: not a readable toolproof run database ({exc}); it is truncated, damaged or "
        f"not SQLite{kept}. Nothing was changed. Start a new run in another directory, or "
        f"move {db.name} aside (sqlite3 {db.name} .recover may save part of it) and run again"
    )


def _check(db: Path, conn: sqlite3.Connection, *, full: bool) -> None:
    """Read the schema (and, when ``full``, every page) so damage shows now, not mid-run."""
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        if full:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("; ".join(str(p) for p in problems))
    except sqlite3.Error as exc:
        conn.close()
        raise _unreadable(db, exc) from None


class RunReader:
    """Read-only access to a run directory."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        db = run_dir / DB_NAME
        if not db.is_file():
            raise FileNotFoundError(f"{run_dir} is not a toolproof run (no {DB_NAME})")
        self._db = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
        _check(db, self._db, full=False)
        try:
            self._db.execute("SELECT COUNT(*) FROM meta").fetchone()
        except sqlite3.Error as exc:
            self._db.close()
            raise _unreadable(db, exc) from None

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

    def records(self) -> Iterator[EpisodeRecord]:
        """Every episode, in task and epoch order."""
        for (text,) in self._db.execute("SELECT record FROM episodes ORDER BY task_id, epoch"):
            yield EpisodeRecord.model_validate_json(text)

    def record(self, key: str) -> EpisodeRecord | None:
        """One episode by key, or None."""
        row = self._db.execute("SELECT record FROM episodes WHERE key = ?", (key,)).fetchone()
        return None if row is None else EpisodeRecord.model_validate_json(row[0])

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
        """Close the database."""
        self._db.close()

    def __enter__(self) -> RunReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunLockedError(ToolproofError):
    """Another live process is writing to this run directory."""


_HELD: dict[Path, tuple[int, int]] = {}
"""Run directories this process holds the lock of: resolved path -> (fd, holders)."""


class RunLock:
    """One writer per run directory: an exclusive ``flock`` on ``run_dir/run.lock``.

    Two processes writing one run side by side would interleave episodes and race
    in :meth:`RunStore.finalize`, so the second is refused while the first lives.
    The kernel drops the lock when its process dies, however it dies, so a crashed
    run never leaves a stale lock behind. Within one process the lock is
    re-entrant (counted): the CLI holds it for the whole command while the
    :class:`RunStore` it opens takes it again.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._key: Path | None = None

    def acquire(self) -> RunLock:
        """Take the lock (creating the directory), or refuse at once.

        Raises:
            RunLockedError: Another process holds it; the message names its pid.
        """
        if self._key is not None:
            return self
        self.run_dir.mkdir(parents=True, exist_ok=True)
        key = self.run_dir.resolve()
        held = _HELD.get(key)
        if held is not None:
            _HELD[key] = (held[0], held[1] + 1)
            self._key = key
            return self
        fd = os.open(key / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace")
            first = text.split("\n", 1)[0].strip()
            owner = first if first.isdigit() else "unknown"  # only ever a pid is shown
            os.close(fd)
            raise RunLockedError(
                f"{self.run_dir} is in use by another toolproof process (pid {owner}): a run "
                "directory has one writer at a time. Wait for that run to end (or stop it "
                f"with Ctrl-C), then `toolproof run --resume {shlex.quote(str(self.run_dir))}`; "
                "or write to "
                "another folder with -o."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD[key] = (fd, 1)
        self._key = key
        return self

    def release(self) -> None:
        """Give the lock back (the last holder in this process unlocks); idempotent."""
        key, self._key = self._key, None
        if key is None or key not in _HELD:
            return
        fd, holders = _HELD[key]
        if holders > 1:
            _HELD[key] = (fd, holders - 1)
            return
        del _HELD[key]
        os.close(fd)  # closing the only descriptor drops the flock

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class RunStore:
    """Append-only writer of a run directory; each episode is committed as it ends.

    Opening one takes the directory's :class:`RunLock` (until :meth:`close`).

    Raises:
        RunLockedError: Another process is writing to the directory.
        RunDirError: an existing ``run.db`` is damaged (checked in full before anything is
            written, so a resume refuses at once and the file is left as it was).
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._lock = RunLock(run_dir).acquire()
        try:
            self._open()
        except BaseException:
            self._lock.release()
            raise

    def _open(self) -> None:
        run_dir = self.run_dir
        db = run_dir / DB_NAME
        self._db = sqlite3.connect(db, check_same_thread=False)
        _check(db, self._db, full=True)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            (seq,) = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM episodes").fetchone()
        except sqlite3.Error as exc:
            self._db.close()
            raise _unreadable(db, exc) from None
        self._seq = int(seq)
        self._jsonl = (run_dir / TRAJECTORIES).open("a", encoding="utf-8")

    def set_meta(self, values: dict[str, Any]) -> None:
        """Record run facts (config, suite digest, versions)."""
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [(k, json.dumps(v, sort_keys=True)) for k, v in values.items()],
            )

    def meta(self) -> dict[str, Any]:
        """The recorded run facts."""
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def keys(self) -> set[str]:
        """Keys of the finished episodes."""
        return {k for (k,) in self._db.execute("SELECT key FROM episodes")}

    def append(self, record: EpisodeRecord) -> None:
        """Store one finished episode: one SQLite transaction, then a JSONL line."""
        self._seq += 1
        score, traj = record.score, record.trajectory
        usage = traj.usage()
        text = record.model_dump_json()
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO episodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.key,
                    self._seq,
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
                    text,
                ),
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO steps VALUES (?, ?, ?)",
                [(record.key, s.index, s.model_dump_json()) for s in traj.steps],
            )
        self._jsonl.write(traj.model_dump_json() + "\n")
        self._jsonl.flush()

    def finalize(self, summary: dict[str, Any]) -> None:
        """Rewrite trajectories.jsonl in task order (same seed: same file); write summary.json.

        Safe to repeat after a crash at any moment: the database is the truth, a
        leftover ``*.tmp`` file is overwritten, and each file is replaced whole.
        The run lock keeps a second process from finalizing at the same time.
        """
        self._jsonl.close()
        tmp = self.run_dir / (TRAJECTORIES + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for (text,) in self._db.execute("SELECT record FROM episodes ORDER BY task_id, epoch"):
                fh.write(json.dumps(json.loads(text)["trajectory"], separators=(",", ":")) + "\n")
        tmp.replace(self.run_dir / TRAJECTORIES)
        self._jsonl = (self.run_dir / TRAJECTORIES).open("a", encoding="utf-8")
        add_indexes(self._db)  # for readers that filter and search (the viewer)
        out = self.run_dir / (SUMMARY + ".tmp")
        out.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        out.replace(self.run_dir / SUMMARY)

    def close(self) -> None:
        """Close files; idempotent."""
        if not self._jsonl.closed:
            self._jsonl.close()
        self._db.close()
        self._lock.release()

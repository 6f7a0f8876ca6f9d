"""The run directory on disk: ``run.db`` (SQLite), ``trajectories.jsonl``, ``summary.json``.

The engine appends through :class:`RunStore`; reports, metrics and the viewer
read through :class:`RunReader` and never need the engine.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolproof.spec.errors import ToolproofError

from .record import EpisodeRecord

DB_NAME = "run.db"
TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
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

    def count(self) -> int:
        """Number of stored episodes."""
        (n,) = self._db.execute("SELECT COUNT(*) FROM episodes").fetchone()
        return int(n)

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


class RunStore:
    """Append-only writer of a run directory; each episode is committed as it ends.

    Raises:
        RunDirError: an existing ``run.db`` is damaged (checked in full before anything is
            written, so a resume refuses at once and the file is left as it was).
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
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
        """Rewrite trajectories.jsonl in task order (same seed: same file); write summary.json."""
        self._jsonl.close()
        tmp = self.run_dir / (TRAJECTORIES + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for (text,) in self._db.execute("SELECT record FROM episodes ORDER BY task_id, epoch"):
                fh.write(json.dumps(json.loads(text)["trajectory"], separators=(",", ":")) + "\n")
        tmp.replace(self.run_dir / TRAJECTORIES)
        self._jsonl = (self.run_dir / TRAJECTORIES).open("a", encoding="utf-8")
        out = self.run_dir / (SUMMARY + ".tmp")
        out.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        out.replace(self.run_dir / SUMMARY)

    def close(self) -> None:
        """Close files; idempotent."""
        if not self._jsonl.closed:
            self._jsonl.close()
        self._db.close()

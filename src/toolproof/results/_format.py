"""The run directory's format: file names, the SQLite schema, damage checks, the trajectory index.

Each trajectory is stored once, as one line of ``trajectories.jsonl``; its row in
``run.db`` holds the rest of the record (task facts, score, attempts) and where the
line is (``traj_offset``, ``traj_length``). Rows written before this layout (schema
1) hold the whole record, trajectory included, and no offset; both are read.

Every trajectory line names its episode near its start (``"episode_id":"<key>"``,
after ``format_version``), so an offset that does not point at its own episode's
line (a finalize cut short between replacing the file and updating the offsets) is
noticed and the file is indexed again by that name.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from toolproof.spec.errors import ToolproofError

DB_NAME = "run.db"
TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
SCHEMA_VERSION = 2

SCHEMA = """
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
    record TEXT NOT NULL,
    traj_offset INTEGER,
    traj_length INTEGER
);
CREATE TABLE IF NOT EXISTS steps (
    episode_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    step TEXT NOT NULL,
    PRIMARY KEY (episode_key, idx)
);
CREATE INDEX IF NOT EXISTS episodes_task ON episodes (task_id, epoch);
"""
"""The ``steps`` table is kept (empty) so that older readers still open new runs."""

TRAJECTORY_COLUMNS = ("traj_offset", "traj_length")
"""Added by schema 2; a schema-1 database gets them on first open by a writer."""


class RunDirError(ToolproofError):
    """A run directory cannot be read (``run.db`` truncated, overwritten or not SQLite; a
    trajectory line damaged) or written (read-only, not a folder, no space left).

    Not an episode's infra error: the run as a whole refuses to go on (the CLI exits 2).
    """


def unreadable(db: Path, exc: sqlite3.Error) -> RunDirError:
    """The error for a damaged ``run.db``: what is kept, where, and what to do."""
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


def unwritable(path: Path, exc: BaseException) -> RunDirError:
    """The error for a run folder toolproof cannot write: where, why, and what to do."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return RunDirError(
        f"{path}: cannot write the run there ({why}). Give a folder you can write to "
        "(-o FOLDER), or make this one writable (space left, permissions, not mounted "
        "read-only) and run again; a run stopped part way resumes with --resume"
    )


def check(db: Path, conn: sqlite3.Connection, *, full: bool) -> None:
    """Read the schema (and, when ``full``, every page) so damage shows now, not mid-run."""
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        if full:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("; ".join(str(p) for p in problems))
    except sqlite3.Error as exc:
        conn.close()
        raise unreadable(db, exc) from None


def has_offsets(conn: sqlite3.Connection) -> bool:
    """Whether the episodes table has the trajectory columns (schema 2)."""
    names = {row[1] for row in conn.execute("PRAGMA table_info(episodes)")}
    return all(c in names for c in TRAJECTORY_COLUMNS)


HEAD_BYTES = 512
"""Where a trajectory line names its episode: within its first bytes."""
_EPISODE_ID = re.compile(rb'"episode_id":("(?:[^"\\]|\\.){0,400}")')


def marker(key: str) -> bytes:
    """The bytes that name episode ``key`` at the start of its trajectory line."""
    return b'"episode_id":' + json.dumps(key, ensure_ascii=False).encode() + b","


LINE_START = b'{"format_version":'
"""How every trajectory line begins (``Trajectory``'s first field)."""


def is_line_of(key: str, line: bytes) -> bool:
    """Whether ``line`` is a complete trajectory line of episode ``key`` (from its first byte:
    an offset into a file whose earlier bytes were cut or edited reads a shifted line)."""
    return (
        line.startswith(LINE_START)
        and line.endswith(b"\n")
        and marker(key) in line[: HEAD_BYTES + 4 * len(key)]
    )


def trajectory_line(trajectory: str, score: str) -> bytes:
    """One line of ``trajectories.jsonl``: the trajectory's JSON object with the episode's
    score added as its last field, ``"score"`` (so a notebook reading the file alone has
    every episode's verdict), and a newline.

    Lines written before the score was added have no ``"score"``; readers take the score
    from ``run.db`` (``join_record``), where every row has it, so both read the same.
    """
    return f'{trajectory[:-1]},"score":{score}}}\n'.encode()


def join_record(record: str, trajectory: bytes) -> str:
    """The full record JSON: the stored row's record with its trajectory line put back."""
    return f'{record[:-1]},"trajectory":{trajectory.decode("utf-8").rstrip()}}}'


def index_lines(path: Path) -> dict[str, tuple[int, int]]:
    """Episode key -> (offset, length) of its last complete line in a trajectories file.

    The recovery path only (offsets that point at the wrong line): one pass over the
    file reading each line's first bytes.
    """
    found: dict[str, tuple[int, int]] = {}
    if not path.is_file():
        return found
    offset = 0
    with path.open("rb") as fh:
        for line in fh:
            match = _EPISODE_ID.search(line[:HEAD_BYTES])
            if line.startswith(LINE_START) and line.endswith(b"\n") and match is not None:
                try:
                    key = json.loads(match.group(1))
                except ValueError:
                    key = None
                if isinstance(key, str):
                    found[key] = (offset, len(line))
            offset += len(line)
    return found

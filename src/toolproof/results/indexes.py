"""Indexes of ``run.db`` for readers that filter, sort and search episodes (the viewer).

An episode row holds its whole record, so a scan of the ``episodes`` table reads
every record (about 8 KB each): half a second at 20,000 episodes. The indexes
here let readers skip that:

* ``episodes_rows``: a *covering* index of every column :meth:`RunReader.rows`
  returns, in task and epoch order, so the first page is an index walk and any
  other filter or sort scans the index (a few MB), never the records;
  (an index per filter column would be worse: its matches are looked up in the table,
  record and all, one by one);
* ``episodes_search``: a trigram full-text index of key, failure mode and
  termination, for substring search. It is filled once, by :func:`add_indexes`,
  and records the episode count and the last sequence number it saw;
  :func:`search_current` says whether it still describes the table (a resumed run
  appends after it), so a reader never trusts a stale one.

B-tree indexes are kept current by SQLite itself on every later write.
:func:`add_indexes` is idempotent; the run store calls it when a run finishes.
"""

from __future__ import annotations

import sqlite3

ROW_COLUMNS = (
    "key",
    "task_id",
    "epoch",
    "passed",
    "level",
    "termination",
    "fraction",
    "n_steps",
    "n_tool_calls",
    "duration_s",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "category",
    "type",
    "difficulty",
    "failure_mode",
)
"""The columns of an episode row (what ``RunReader.rows`` returns), without the record."""

_COVERING = ", ".join(
    ["task_id", "epoch", *(c for c in ROW_COLUMNS if c not in ("task_id", "epoch"))]
)
_STATEMENTS = (
    f"CREATE INDEX IF NOT EXISTS episodes_rows ON episodes ({_COVERING})",
    "CREATE INDEX IF NOT EXISTS episodes_seq ON episodes (seq)",  # MAX(seq) without a scan
    "CREATE VIRTUAL TABLE IF NOT EXISTS episodes_search USING fts5("
    "key, failure_mode, termination, content='', tokenize='trigram')",
    "CREATE TABLE IF NOT EXISTS episodes_search_state (n INTEGER NOT NULL, seq INTEGER NOT NULL)",
)
SEARCH_MIN_CHARS = 3
"""Trigram search needs at least three characters; shorter text is matched by a scan."""


def _table_stamp(conn: sqlite3.Connection) -> tuple[int, int]:
    n, seq = conn.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM episodes").fetchone()
    return int(n), int(seq)


def add_indexes(conn: sqlite3.Connection) -> None:
    """Create the indexes (if missing) and refill the search index, in one transaction.

    Raises:
        sqlite3.Error: the database cannot be written.
    """
    with conn:
        for statement in _STATEMENTS:
            conn.execute(statement)
        # A contentless table cannot DELETE; 'delete-all' empties it.
        conn.execute("INSERT INTO episodes_search (episodes_search) VALUES ('delete-all')")
        conn.execute(
            "INSERT INTO episodes_search (rowid, key, failure_mode, termination) "
            "SELECT rowid, key, COALESCE(failure_mode, ''), termination FROM episodes"
        )
        conn.execute("DELETE FROM episodes_search_state")
        conn.execute("INSERT INTO episodes_search_state VALUES (?, ?)", _table_stamp(conn))


def search_current(conn: sqlite3.Connection) -> bool:
    """Whether ``episodes_search`` exists and was filled from the table as it is now."""
    try:
        row = conn.execute("SELECT n, seq FROM episodes_search_state").fetchone()
    except sqlite3.Error:  # no such table: a run finished before indexes, or still running
        return False
    return row is not None and (int(row[0]), int(row[1])) == _table_stamp(conn)


def search_text(text: str) -> str:
    """``text`` as one FTS5 phrase: every character literal (no operators, no columns)."""
    return '"' + text.replace('"', '""') + '"'


def search_count(conn: sqlite3.Connection, phrase: str) -> int:
    """Matches of an FTS5 ``phrase`` (see :func:`search_text`) in ``episodes_search``."""
    sql = "SELECT COUNT(*) FROM episodes_search WHERE episodes_search MATCH ?"
    (n,) = conn.execute(sql, (phrase,)).fetchone()
    return int(n)

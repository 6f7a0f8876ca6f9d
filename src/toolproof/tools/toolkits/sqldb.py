"""A real SQLite database, queried and changed through SQL tools.

Record layout::

    sql:
      schema: "CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT, salary REAL); ..."
      tables:
        staff:
          "1": {name: Ada, salary: 5200}      # key: the primary key (or rowid)
          "2": {name: Alan, salary: 4800}

The records are the truth and the database is a cache of them. Each episode
builds an in-memory SQLite database from ``records.sql`` on the first call and
keeps it in ``world.extras`` together with the digest of ``records.sql`` it was
built from; any call that finds a different digest (the records were restored
or changed by something else) rebuilds it. After every statement run by
``sql_execute`` the tables are written back into the records, so the world's
digest, snapshots, diffs and ``state`` checks (``sql.tables.staff.2.salary``)
all see the change without knowing about SQLite.

Writing back keeps a row's record object untouched when SQLite holds the same
values (``true`` and ``1``, ``5200`` and ``5200.0`` are the same to SQLite), so
a statement shows up in the diff as exactly the rows and cells it changed. The
``schema`` text is rewritten only when a statement changed the schema.

A row's key is its table's single-column primary key, or its ``rowid`` when the
table has none (or a composite one); the key column is never repeated inside
the row. ``sql_query`` runs under an authorizer that allows reads only, so a
"read" query cannot change anything, whatever it says; both tools run one
statement at a time and stop statements that run too long.

:func:`query_result` is a custom check for tasks: it runs a SELECT on the
database as the episode left it, e.g.
``{kind: custom, function: "toolproof.tools.toolkits.sqldb:query_result",
args: {query: "SELECT COUNT(*) FROM staff", expected: 3}}``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolproof.trajectory import ToolKind
from toolproof.worlds import records as rec

from ..base import ToolContext, ToolError, tool

MAX_ROWS = 200
"""Rows returned by one query at most."""
_MAX_PROGRESS_CALLS = 5_000
"""Progress-handler calls (each every 1000 VM steps) before a statement is stopped."""
_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_NEVER = frozenset(
    {
        sqlite3.SQLITE_ATTACH,
        sqlite3.SQLITE_DETACH,
        sqlite3.SQLITE_PRAGMA,
        sqlite3.SQLITE_TRANSACTION,
        sqlite3.SQLITE_SAVEPOINT,
        sqlite3.SQLITE_CREATE_VTABLE,
        sqlite3.SQLITE_DROP_VTABLE,
    }
)
_EXTRA_KEY = "sqldb"
Value = str | int | float | None


@dataclass
class _Database:
    """The cached database of one episode."""

    conn: sqlite3.Connection
    digest: str
    schema: list[str]

    def close(self) -> None:
        """Close the connection (the world calls this when the episode ends)."""
        self.conn.close()


def _spec(ctx: ToolContext) -> dict[str, Any]:
    spec = ctx.world.records.get("sql")
    if not isinstance(spec, dict):
        raise ToolError("this task has no database")
    return spec


def _master(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type DESC, name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _table_names(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master"
        " WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _key_column(conn: sqlite3.Connection, table: str) -> tuple[str, bool]:
    """The column a row is keyed by, and whether its value is an integer."""
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    keys = [row for row in info if row[5] > 0]
    if len(keys) == 1:
        return str(keys[0][1]), "INT" in str(keys[0][2]).upper()
    return "rowid", True


def _build(spec: dict[str, Any]) -> sqlite3.Connection:
    """A fresh in-memory database holding the schema and rows of ``spec``."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.executescript(str(spec.get("schema", "")))
    known = set(_table_names(conn))
    for table, rows in (spec.get("tables") or {}).items():
        if table not in known:
            raise ValueError(f"records.sql.tables.{table}: no such table in records.sql.schema")
        key, integer = _key_column(conn, table)
        for row_key, row in rows.items():
            if key in row:
                raise ValueError(
                    f"records.sql.tables.{table}.{row_key}: the key column {key!r} repeats the key"
                )
            columns = [key, *row]
            values = [int(row_key) if integer else row_key, *row.values()]
            names = ", ".join(f'"{c}"' for c in columns)
            marks = ", ".join("?" for _ in columns)
            conn.execute(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', values)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _database(ctx: ToolContext) -> _Database:
    spec = _spec(ctx)
    digest = rec.digest(spec)
    cached = ctx.world.extras.get(_EXTRA_KEY)
    if isinstance(cached, _Database) and cached.digest == digest:
        return cached
    if isinstance(cached, _Database):
        cached.close()
    conn = _build(spec)
    db = _Database(conn=conn, digest=digest, schema=_master(conn))
    ctx.world.extras[_EXTRA_KEY] = db
    return db


def _same(old: Any, new: Any) -> bool:
    if isinstance(old, bool):
        old = int(old)
    if isinstance(old, int | float) and isinstance(new, int | float):
        return float(old) == float(new)
    return bool(old == new)


def _jsonable(value: Any) -> Any:
    return value.hex() if isinstance(value, bytes) else value


def _merge(old: Any, row: dict[str, Any]) -> dict[str, Any]:
    """The row as the records should hold it: the old object if unchanged, else cell by cell."""
    if not isinstance(old, dict):
        return dict(row)
    if all(_same(old.get(c), v) for c, v in row.items()) and all(c in row for c in old):
        return old
    merged = {}
    for column, value in row.items():
        if column in old and _same(old[column], value):
            merged[column] = old[column]
        elif value is not None or column in old:
            merged[column] = value
    return merged


def _sync(ctx: ToolContext, db: _Database) -> None:
    """Write the database back into ``records.sql``, changing only what differs."""
    spec = _spec(ctx)
    conn = db.conn
    schema = _master(conn)
    if schema != db.schema:
        spec["schema"] = ";\n".join(schema) + ";"
        db.schema = schema
    old_tables: dict[str, Any] = spec.get("tables") or {}
    tables: dict[str, Any] = {}
    for table in _table_names(conn):
        key, _ = _key_column(conn, table)
        cursor = conn.execute(f'SELECT "{key}" AS __key, * FROM "{table}" ORDER BY "{key}"')
        columns = [d[0] for d in cursor.description][1:]
        old_rows: dict[str, Any] = old_tables.get(table) or {}
        rows: dict[str, Any] = {}
        for values in cursor.fetchall():
            row_key = str(values[0])
            row = {c: _jsonable(v) for c, v in zip(columns, values[1:], strict=True) if c != key}
            rows[row_key] = _merge(old_rows.get(row_key), row)
        if rows or table in old_tables:
            tables[table] = rows
    spec["tables"] = tables
    db.digest = rec.digest(spec)


def _guard(conn: sqlite3.Connection, read_only: bool) -> None:
    def authorize(action: int, *_: object) -> int:
        if read_only:
            return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_DENY if action in _NEVER else sqlite3.SQLITE_OK

    calls = [0]

    def progress() -> int:
        calls[0] += 1
        return 1 if calls[0] > _MAX_PROGRESS_CALLS else 0

    conn.set_authorizer(authorize)
    conn.set_progress_handler(progress, 1000)


def _release(conn: sqlite3.Connection) -> None:
    conn.set_authorizer(None)
    conn.set_progress_handler(None, 1000)


def _run(
    db: _Database, statement: str, params: Sequence[Value] | None, *, read_only: bool
) -> sqlite3.Cursor:
    if not statement.strip():
        raise ToolError("the statement is empty")
    _guard(db.conn, read_only)
    try:
        return db.conn.execute(statement, list(params or []))
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "not authorized" in text:
            if read_only:
                text += " (sql_query only reads: use SELECT; changes need sql_execute)"
            else:
                text += " (PRAGMA, ATTACH and transaction statements are not available)"
        elif "interrupted" in text:
            text = "the statement ran too long and was stopped"
        raise ToolError(f"SQL error: {text}") from None
    except (sqlite3.InterfaceError, ValueError, OverflowError) as exc:
        raise ToolError(f"SQL error: {exc}") from None


def _loose_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            _loose_equal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, bool):
        expected = int(expected)
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return abs(float(expected) - float(actual)) < 1e-6
    return bool(expected == actual)


def query_result(ctx: Any, query: str, expected: Any) -> tuple[bool, str]:
    """Custom check: a read-only query on the final database returns ``expected``.

    ``expected`` is compared with the first column of the first row when it is
    a scalar, and with all rows (a list of lists) when it is a list. Numbers
    compare by value (``5200`` equals ``5200.0``).

    Args:
        ctx: The scoring context (anything with a ``final`` snapshot).
        query: One SELECT statement.
        expected: A scalar, or the rows as a list of lists.
    """
    spec = ctx.final.records.get("sql")
    if not isinstance(spec, dict):
        return False, "the final state has no database"
    conn = _build(spec)
    try:
        db = _Database(conn=conn, digest="", schema=[])
        rows = [list(r) for r in _run(db, query, None, read_only=True).fetchall()]
    except ToolError as exc:
        return False, str(exc)
    finally:
        conn.close()
    actual: Any = rows if isinstance(expected, list) else (rows[0][0] if rows and rows[0] else None)
    if _loose_equal(expected, actual):
        return True, f"{query} returned {actual!r}"
    return False, f"{query} returned {actual!r}, expected {expected!r}"


def _rows(cursor: sqlite3.Cursor) -> dict[str, Any]:
    columns = [d[0] for d in cursor.description or []]
    fetched = cursor.fetchmany(MAX_ROWS + 1)
    rows = [[_jsonable(v) for v in row] for row in fetched[:MAX_ROWS]]
    return {
        "columns": columns,
        "rows": rows,
        "row_count": len(rows),
        "truncated": len(fetched) > MAX_ROWS,
    }


@tool(kind=ToolKind.READ)
def sql_query(ctx: ToolContext, query: str, params: list[Value] | None = None) -> dict[str, Any]:
    """Run one read-only SQL query (SELECT or WITH ... SELECT) and return its rows (at most 200).

    Args:
        query: One SQLite SELECT statement, e.g. "SELECT name FROM staff WHERE salary > ?".
        params: Values for the ? placeholders, in order.
    """
    db = _database(ctx)
    try:
        cursor = _run(db, query, params, read_only=True)
        return _rows(cursor)
    except sqlite3.DatabaseError as exc:
        raise ToolError(f"SQL error: {exc}") from None
    finally:
        _release(db.conn)


@tool(kind=ToolKind.WRITE)
def sql_execute(
    ctx: ToolContext, statement: str, params: list[Value] | None = None
) -> dict[str, Any]:
    """Run one SQL statement that changes the database (INSERT, UPDATE, DELETE, CREATE, ...).

    Each statement is committed at once; there are no transactions.

    Args:
        statement: One SQLite statement, e.g. "UPDATE staff SET salary = ? WHERE id = ?".
        params: Values for the ? placeholders, in order.
    """
    db = _database(ctx)
    try:
        cursor = _run(db, statement, params, read_only=False)
        out: dict[str, Any] = {
            "rows_affected": max(cursor.rowcount, 0),
            "last_row_id": cursor.lastrowid,
        }
        if cursor.description is not None:
            out.update(_rows(cursor))
    except sqlite3.DatabaseError as exc:
        raise ToolError(f"SQL error: {exc}") from None
    finally:
        _release(db.conn)
        _sync(ctx, db)
    return out


@tool(kind=ToolKind.READ)
def sql_schema(ctx: ToolContext, table: str | None = None) -> list[dict[str, Any]]:
    """Describe the database: each table's columns (name, type, primary key) and row count.

    Args:
        table: Only this table.
    """
    db = _database(ctx)
    names = _table_names(db.conn)
    if table is not None:
        if table not in names:
            raise ToolError(f"no table {table!r}; tables: {', '.join(names) or 'none'}")
        names = [table]
    out = []
    for name in names:
        info = db.conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        count = db.conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
        out.append(
            {
                "table": name,
                "columns": [
                    {"name": c[1], "type": c[2], "primary_key": bool(c[5]), "not_null": bool(c[3])}
                    for c in info
                ],
                "rows": count,
            }
        )
    return out

"""The episode table: filters, sorting and paging turned into a RunReader query.

Only whitelisted column names reach the SQL text; every value is a parameter.
Filters and sorts run on ``run.db``'s covering index of the row columns and search on
its trigram index (:mod:`toolproof.results.indexes`), never on a scan of the records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolproof.results import RunReader
from toolproof.results.indexes import ROW_COLUMNS, SEARCH_MIN_CHARS, search_text

SORTABLE = tuple(c for c in ROW_COLUMNS if c != "key")
"""Columns a page may be sorted by: every row column but the key."""
_EXACT = ("category", "type", "level", "termination", "difficulty")
MAX_LIMIT = 500
DEFAULT_LIMIT = 50


class QueryError(ValueError):
    """A query parameter the table does not understand."""


@dataclass(frozen=True)
class EpisodeQuery:
    """What the episode table asks for."""

    where: str
    params: tuple[Any, ...]
    order: str
    limit: int
    offset: int
    filtered: bool
    text: str = ""
    """The search text (already part of ``where`` as a LIKE; an index narrows it)."""


def _int(args: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = args.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise QueryError(f"{name} must be an integer, got {raw!r}") from None
    return max(low, min(high, value))


def parse_query(args: Mapping[str, str]) -> EpisodeQuery:
    """Build the query from request arguments.

    Arguments: ``q`` (text in task id, key or failure mode), ``category``, ``type``,
    ``level``, ``termination``, ``difficulty``, ``failure_mode`` (``none`` for
    unclassified), ``passed`` (``0``/``1``), ``sort`` (a column), ``dir``
    (``asc``/``desc``), ``limit`` (1..500) and ``offset``.

    Raises:
        QueryError: a bad sort column, direction or number.
    """
    clauses: list[str] = []
    params: list[Any] = []
    for column in _EXACT:
        value = args.get(column)
        if value:
            clauses.append(f"{column} = ?")
            params.append(int(value) if column == "difficulty" and value.isdigit() else value)
    mode = args.get("failure_mode")
    if mode == "none":
        clauses.append("failure_mode IS NULL")
    elif mode:
        clauses.append("failure_mode = ?")
        params.append(mode)
    passed = args.get("passed")
    if passed in ("0", "1"):
        clauses.append("passed = ?")
        params.append(int(passed))
    elif passed:
        raise QueryError(f"passed must be 0 or 1, got {passed!r}")
    text = (args.get("q") or "").strip()
    if text:
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses.append(
            "(key LIKE ? ESCAPE '\\' OR failure_mode LIKE ? ESCAPE '\\' "
            "OR termination LIKE ? ESCAPE '\\')"
        )
        params.extend([like, like, like])
    sort = args.get("sort") or "task_id"
    if sort not in SORTABLE:
        raise QueryError(f"sort must be one of {', '.join(SORTABLE)}; got {sort!r}")
    direction = (args.get("dir") or "asc").lower()
    if direction not in ("asc", "desc"):
        raise QueryError(f"dir must be asc or desc, got {direction!r}")
    order = f"{sort} {direction}" if sort == "task_id" else f"{sort} {direction}, task_id"
    return EpisodeQuery(
        where=" AND ".join(clauses),
        params=tuple(params),
        order=f"{order}, epoch",
        limit=_int(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
        offset=_int(args, "offset", 0, 0, 10**9),
        filtered=bool(clauses),
        text=text,
    )


_SELECTIVE = 0.1
"""Below this share of episodes matching, matches are fetched one by one; above, the
covering index is scanned once and matches picked from it (bounded either way)."""


def _with_search(reader: RunReader, query: EpisodeQuery) -> tuple[str, tuple[Any, ...]]:
    """``where`` narrowed by the trigram index when there is a current one and the text
    is long enough. The LIKE clause stays: the index finds candidates, LIKE decides."""
    # FTS5 ends a phrase at a NUL: such text is matched by LIKE alone.
    if len(query.text) < SEARCH_MIN_CHARS or "\0" in query.text or not reader.search_ready():
        return query.where, query.params
    phrase = search_text(query.text)
    matches = reader.search_count(phrase)
    rowid = "rowid" if matches <= _SELECTIVE * reader.count() else "+rowid"  # + : no lookup
    clause = f"{rowid} IN (SELECT rowid FROM episodes_search WHERE episodes_search MATCH ?)"
    return f"{clause} AND {query.where}", (phrase, *query.params)


def episode_page(run_dir: Path, query: EpisodeQuery) -> dict[str, Any]:
    """One page of episode rows and the number of rows the filter matches."""
    with RunReader(run_dir) as reader:
        where, params = _with_search(reader, query)
        rows = reader.rows(
            where=where,
            params=params,
            order=query.order,
            limit=query.limit,
            offset=query.offset,
        )
        if not query.filtered:
            total = reader.count()
        elif query.offset == 0 and len(rows) < query.limit:
            total = len(rows)
        else:
            total = reader.count(where=where, params=params)
    return {"total": total, "offset": query.offset, "limit": query.limit, "rows": rows}

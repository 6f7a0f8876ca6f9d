"""The episode table on run.db's indexes, and the overview stored when a run finishes.

Timings are ``benchmarks/bench_viewer.py``'s; these pin what makes them: the queries use
the covering or search index (never a scan of the records), the search index never
answers for a table it no longer matches, hostile search text is literal, and a stored
overview is used only while it matches the run's files.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from report_helpers import record
from starlette.testclient import TestClient

from toolproof.metrics import summarize
from toolproof.results import RunReader, RunStore
from toolproof.viewer import _overview, create_app, write_overview
from toolproof.viewer._queries import _with_search, episode_page, parse_query

HOSTILE = [
    '"',
    '""',
    "t1 OR t2",
    "NEAR(t1 t2)",
    "key:t1",
    "t1*",
    "^t1",
    "%",
    "_",
    "\\",
    "'; DROP TABLE episodes; --",
    "t\x00x",
    "ünïcødé",
    "x" * 5000,
    "-- ",
    "task-1",
    "ASK",
    "fail",
]


def _run(tmp_path: Path, name: str = "run", n: int = 30) -> Path:
    """A finished run of ``n`` crafted episodes (tasks t0..t9, three epochs each)."""
    run_dir = tmp_path / name
    store = RunStore(run_dir)
    meta: dict[str, Any] = {"config": {"agent": "a"}, "planned": n}
    store.set_meta(meta)
    records = [
        record(f"task-{i % 10}", i // 10, passed=i % 3 == 0, category=("normal", "edge")[i % 2])
        for i in range(n)
    ]
    for rec in records:
        store.append(rec)
    store.finalize(summarize(records, meta))
    store.close()
    return run_dir


def _plain(run_dir: Path, args: dict[str, str]) -> dict[str, Any]:
    """The page as a LIKE scan alone gives it (no search index)."""
    query = parse_query(args)
    with RunReader(run_dir) as reader:
        rows = reader.rows(
            where=query.where,
            params=query.params,
            order=query.order,
            limit=query.limit,
            offset=query.offset,
        )
        total = reader.count(where=query.where, params=query.params)
    return {"total": total, "rows": rows}


def _plans(run_dir: Path, args: dict[str, str]) -> list[str]:
    query = parse_query(args)
    conn = sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True)
    with RunReader(run_dir) as reader:
        where, params = _with_search(reader, query)
    sql = (
        f"SELECT key, passed, duration_s FROM episodes WHERE {where or '1'} ORDER BY {query.order}"
    )
    try:
        return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    finally:
        conn.close()


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"passed": "0"},
        {"category": "edge", "sort": "duration_s", "dir": "desc"},
        {"q": "task-3"},
        {"q": "task", "sort": "n_steps"},
        {"q": "TASK-3", "passed": "1"},
    ],
)
def test_filters_and_search_never_scan_the_records(tmp_path: Path, args: dict[str, str]) -> None:
    run_dir = _run(tmp_path)
    plans = _plans(run_dir, args)
    episode_steps = [p for p in plans if "episodes " in p or p.endswith("episodes")]
    assert episode_steps and all(
        "COVERING INDEX" in p or "INTEGER PRIMARY KEY" in p for p in episode_steps
    ), plans


@pytest.mark.parametrize("text", HOSTILE)
def test_search_is_literal_and_matches_a_plain_scan(tmp_path: Path, text: str) -> None:
    run_dir = _run(tmp_path)
    args = {"q": text, "limit": "500"}
    page = episode_page(run_dir, parse_query(args))
    assert {"total": page["total"], "rows": page["rows"]} == _plain(run_dir, args)


def test_search_finds_substrings_in_key_and_failure_mode(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    with RunReader(run_dir) as reader:
        assert reader.search_ready()
    page = episode_page(run_dir, parse_query({"q": "ask-3"}))
    assert sorted(r["key"] for r in page["rows"]) == ["task-3#0", "task-3#1", "task-3#2"]
    assert page["total"] == 3


def test_a_search_index_older_than_the_table_is_not_used(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    store = RunStore(run_dir)  # resumed: one more episode after the index was filled
    store.append(record("task-new", 0))
    store.close()
    with RunReader(run_dir) as reader:
        assert not reader.search_ready()
    page = episode_page(run_dir, parse_query({"q": "task-new"}))
    assert [r["key"] for r in page["rows"]] == ["task-new#0"] and page["total"] == 1


def test_a_run_without_indexes_still_answers(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    conn = sqlite3.connect(run_dir / "run.db")
    for name in ("episodes_rows", "episodes_seq"):
        conn.execute(f"DROP INDEX {name}")
    conn.execute("DROP TABLE episodes_search")
    conn.execute("DROP TABLE episodes_search_state")
    conn.commit()
    conn.close()
    page = episode_page(run_dir, parse_query({"q": "task-3", "passed": "1"}))
    assert page == {**page, "total": 1} and page["rows"][0]["key"] == "task-3#0"


def test_the_stored_overview_is_served_without_recomputing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _run(tmp_path)
    stored = write_overview(run_dir)
    assert (run_dir / _overview.OVERVIEW).is_file()

    def refuse(path: Path) -> dict[str, Any]:
        raise AssertionError("the overview was recomputed")

    monkeypatch.setattr(_overview, "overview", refuse)
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        got = client.get("/api/runs/run").json()
    assert got == {"id": "run", **json.loads(json.dumps(stored))}


@pytest.mark.parametrize(
    "content",
    [
        "garbage",
        "[]",
        json.dumps({"format": 99, "stamp": [], "overview": {}}),
        json.dumps({"format": 1, "stamp": [0, 0, 0, 0, 0, 0], "overview": {"agent": "lie"}}),
        json.dumps({"format": 1, "stamp": "now", "overview": []}),
    ],
)
def test_a_stale_or_hostile_stored_overview_is_recomputed_and_replaced(
    tmp_path: Path, content: str
) -> None:
    run_dir = _run(tmp_path)
    (run_dir / _overview.OVERVIEW).write_text(content)
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        got = client.get("/api/runs/run").json()
    assert got["agent"] == "a" and got["episodes"]["finished"] == 30
    data = json.loads((run_dir / _overview.OVERVIEW).read_text())
    assert data["stamp"] == _overview.stamp_of(run_dir)  # rebuilt for the files as they are


def test_a_stored_overview_goes_stale_when_the_run_changes(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    write_overview(run_dir)
    store = RunStore(run_dir)
    store.append(record("task-new", 0, passed=True))
    store.close()
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        assert client.get("/api/runs/run").json()["episodes"]["finished"] == 31


def test_an_unwritable_run_folder_is_still_shown(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    blocked = run_dir / _overview.OVERVIEW
    blocked.mkdir()  # a folder where the file would go: the write fails, the view does not
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        assert client.get("/api/runs/run").json()["episodes"]["finished"] == 30
    assert blocked.is_dir() and not list(run_dir.glob(".overview.json*"))


def test_breakdowns_come_from_rows_not_the_summarys_episode_list(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in ("breakdown", "breakdowns", "tasks"):
        summary.pop(key, None)  # a summary that lists no episode (the bounded-memory format)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    view = _overview.overview(run_dir)
    by_category = {g["key"]: g["n"] for g in view["breakdowns"]["category"]}
    assert by_category == {"edge": 15, "normal": 15}


def test_toolproof_run_stores_the_overview(tmp_path: Path, invoke: Any) -> None:
    out = tmp_path / "run"
    result = invoke("run", "core", "--agent", "oracle", "--task", "stock-sum", "-q", "--out", out)
    assert result.code == 0, result.err
    data = json.loads((out / _overview.OVERVIEW).read_text())
    assert data["stamp"] == _overview.stamp_of(out)
    assert data["overview"]["episodes"]["finished"] == 1
    shutil.rmtree(out)

"""Each trajectory stored once, and the file and the offsets kept in step after any crash."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from toolproof.results import DB_NAME, TRAJECTORIES, RunDirError, RunReader, RunStore

from .test_store import _record


def _rows(run_dir: Path) -> list[tuple[str, str, int, int]]:
    with sqlite3.connect(run_dir / DB_NAME) as conn:
        return conn.execute(
            "SELECT key, record, traj_offset, traj_length FROM episodes ORDER BY key"
        ).fetchall()


def _crash(store: RunStore) -> None:
    """What a SIGKILL leaves: the lines written, the uncommitted rows gone, the lock dropped."""
    store._jsonl.close()  # the lines reach the file (the kernel keeps a killed process's writes)
    store._db.close()  # closing without commit rolls the pending rows back
    store._lock.release()


def test_the_trajectory_is_stored_once(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    store.close()
    ((key, record, offset, length),) = _rows(tmp_path)
    assert "trajectory" not in json.loads(record)  # only in the JSONL line
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        assert conn.execute("SELECT COUNT(*) FROM steps").fetchone() == (0,)
    line = (tmp_path / TRAJECTORIES).read_bytes()[offset : offset + length]
    assert json.loads(line)["episode_id"] == key == "a#0"
    with RunReader(tmp_path) as reader:
        assert reader.record("a#0") == _record("a", 0)


def test_lines_of_uncommitted_episodes_are_cut_off_on_reopen(tmp_path: Path) -> None:
    store = RunStore(tmp_path, commit_every=100)
    store.append(_record("a", 0))
    store.commit()
    store.append(_record("b", 0))  # written to the file, never committed
    _crash(store)
    assert len((tmp_path / TRAJECTORIES).read_text().splitlines()) == 2
    store = RunStore(tmp_path)
    assert store.keys() == {"a#0"}
    assert len((tmp_path / TRAJECTORIES).read_text().splitlines()) == 1
    store.append(_record("b", 0))  # the resume runs it again
    store.close()
    with RunReader(tmp_path) as reader:
        assert [r.key for r in reader.records()] == ["a#0", "b#0"]


def test_a_run_killed_before_any_commit_starts_clean(tmp_path: Path) -> None:
    store = RunStore(tmp_path, commit_every=100)
    store.append(_record("a", 0))
    _crash(store)
    RunStore(tmp_path).close()
    assert (tmp_path / TRAJECTORIES).read_bytes() == b""


def test_offsets_left_behind_by_a_finalize_cut_short_are_found_again(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for record in (_record("c", 0), _record("b", 0), _record("a", 0)):
        store.append(record)
    store.close()
    path = tmp_path / TRAJECTORIES
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(reversed(lines)))  # replaced in task order; offsets not moved yet
    with RunReader(tmp_path) as reader:  # the reader finds each line by its episode
        assert [r.key for r in reader.records()] == ["a#0", "b#0", "c#0"]
        assert reader.record("c#0") == _record("c", 0)
    RunStore(tmp_path).close()  # the writer puts the offsets right
    for key, _, offset, length in _rows(tmp_path):
        assert json.loads(path.read_bytes()[offset : offset + length])["episode_id"] == key


def test_finalize_copies_in_task_order_only_when_needed(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    store.append(_record("b", 0))
    before = (tmp_path / TRAJECTORIES).stat().st_ino
    store.finalize({})
    assert (tmp_path / TRAJECTORIES).stat().st_ino == before  # in order already: untouched
    store.append(_record("a", 0, passed=False))  # a replaced key leaves a dead line
    store.finalize({})
    store.close()
    lines = (tmp_path / TRAJECTORIES).read_text().splitlines()
    assert [json.loads(line)["episode_id"] for line in lines] == ["a#0", "b#0"]
    with RunReader(tmp_path) as reader:
        assert reader.record("a#0") == _record("a", 0, passed=False)


def test_a_missing_or_edited_trajectories_file_is_an_error_for_people(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    store.close()
    (tmp_path / TRAJECTORIES).write_text('{"format_version":1,"episode_id":"zzz#0"}\n')
    with RunReader(tmp_path) as reader, pytest.raises(RunDirError) as caught:
        reader.record("a#0")
    message = str(caught.value)
    assert str(tmp_path / TRAJECTORIES) in message and "'a#0'" in message
    assert "its scores are still in run.db" in message
    (tmp_path / TRAJECTORIES).unlink()
    with RunReader(tmp_path) as reader, pytest.raises(RunDirError, match="cannot open it"):
        reader.record("a#0")
    with RunReader(tmp_path) as reader:  # the rows need no trajectory
        assert [row["key"] for row in reader.rows()] == ["a#0"]


def test_a_run_of_the_old_layout_is_read_and_resumed(tmp_path: Path) -> None:
    old = _record("a", 0)
    with sqlite3.connect(tmp_path / DB_NAME) as conn:  # schema 1: the record holds everything
        conn.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE episodes (key TEXT PRIMARY KEY, seq INTEGER NOT NULL, task_id TEXT "
            "NOT NULL, epoch INTEGER NOT NULL, passed INTEGER NOT NULL, level TEXT NOT NULL, "
            "termination TEXT NOT NULL, fraction REAL NOT NULL, n_steps INTEGER NOT NULL, "
            "n_tool_calls INTEGER NOT NULL, duration_s REAL NOT NULL, input_tokens INTEGER NOT "
            "NULL, output_tokens INTEGER NOT NULL, cost_usd REAL, category TEXT NOT NULL, type "
            "TEXT NOT NULL, difficulty INTEGER NOT NULL, failure_mode TEXT, record TEXT NOT NULL);"
        )
        conn.execute(
            "INSERT INTO episodes VALUES (?,1,'a',0,1,'perfect','completed',1,1,0,0,0,1,NULL,"
            "'normal','single_tool',1,NULL,?)",
            ("a#0", old.model_dump_json()),
        )
    with RunReader(tmp_path) as reader:
        assert reader.record("a#0") == old
    store = RunStore(tmp_path)
    store.append(_record("b", 0))
    store.finalize({})
    store.close()
    lines = (tmp_path / TRAJECTORIES).read_text().splitlines()
    assert [json.loads(line)["episode_id"] for line in lines] == ["a#0", "b#0"]
    with RunReader(tmp_path) as reader:
        assert [r.key for r in reader.records()] == ["a#0", "b#0"]

"""The run directory: appended episode by episode, read back without the engine."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from toolproof.results import (
    DB_NAME,
    SUMMARY,
    TRAJECTORIES,
    EpisodeRecord,
    RunReader,
    RunStore,
    TaskFacts,
)
from toolproof.scoring import Level, Score
from toolproof.trajectory import Message, Step, Termination, Trajectory, Usage


def _record(task_id: str, epoch: int, passed: bool = True, tokens: int = 0) -> EpisodeRecord:
    termination = Termination.COMPLETED if passed else Termination.STEP_LIMIT
    step = Step(
        index=0,
        message=Message(role="assistant", content="done"),
        usage=Usage(input_tokens=tokens, output_tokens=1),
    )
    trajectory = Trajectory(
        episode_id=f"{task_id}#{epoch}",
        task_id=task_id,
        epoch=epoch,
        seed=epoch,
        agent="test",
        prompt=[Message(role="user", content="go")],
        steps=[step],
        final_answer="done",
        termination=termination,
    )
    score = Score(
        passed=passed,
        level=Level.PERFECT if passed else Level.FAIL,
        fraction=1.0 if passed else 0.0,
        checks=[],
        termination=termination,
        tool_calls=0,
    )
    facts = TaskFacts(
        id=task_id, type="single_tool", category="normal", difficulty=1, domain="shop"
    )
    return EpisodeRecord(
        key=f"{task_id}#{epoch}",
        task=facts,
        epoch=epoch,
        seed=epoch,
        agent="test",
        score=score,
        trajectory=trajectory,
    )


def test_append_and_read_back(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.set_meta({"config": {"agent": "test"}, "planned": 3})
    for record in (_record("b", 0), _record("a", 1, passed=False, tokens=5), _record("a", 0)):
        store.append(record)
    store.close()
    with RunReader(tmp_path) as reader:
        assert reader.count() == 3
        assert reader.keys() == {"a#0", "a#1", "b#0"}
        assert [r.key for r in reader.records()] == ["a#0", "a#1", "b#0"]  # task, epoch order
        assert reader.record("a#1") == _record("a", 1, passed=False, tokens=5)
        assert reader.record("zzz#0") is None
        assert reader.meta() == {"config": {"agent": "test"}, "planned": 3}
        failed = reader.rows(where="passed = ?", params=(0,))
        assert [(r["key"], r["termination"], r["input_tokens"]) for r in failed] == [
            ("a#1", "step_limit", 5)
        ]
        assert [r["key"] for r in reader.rows(limit=1, offset=1)] == ["a#1"]
        assert reader.summary() is None


def test_each_append_is_committed_at_once(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    # Another process (a resume, the viewer) sees it before the store is closed.
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        assert conn.execute("SELECT COUNT(*) FROM episodes").fetchone() == (1,)
    lines = (tmp_path / TRAJECTORIES).read_text().splitlines()
    assert [json.loads(line)["episode_id"] for line in lines] == ["a#0"]
    store.close()


def test_reopening_continues_the_sequence_and_replaces_a_key(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    store.close()
    store = RunStore(tmp_path)
    store.append(_record("b", 0))
    store.append(_record("a", 0, passed=False))
    store.close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        rows = dict(conn.execute("SELECT key, seq FROM episodes").fetchall())
    assert rows == {"b#0": 2, "a#0": 3}


def test_finalize_writes_the_summary_and_sorted_trajectories(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for record in (_record("b", 0), _record("a", 1), _record("a", 0)):
        store.append(record)
    store.finalize({"success": {"rate": 1.0}})
    store.close()
    assert json.loads((tmp_path / SUMMARY).read_text()) == {"success": {"rate": 1.0}}
    lines = (tmp_path / TRAJECTORIES).read_text().splitlines()
    assert [json.loads(line)["episode_id"] for line in lines] == ["a#0", "a#1", "b#0"]
    assert Trajectory.model_validate_json(lines[0]) == _record("a", 0).trajectory
    with RunReader(tmp_path) as reader:
        assert reader.summary() == {"success": {"rate": 1.0}}


def test_a_directory_without_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="is not a toolproof run"):
        RunReader(tmp_path)


def test_record_knows_an_infra_error() -> None:
    record = _record("a", 0)
    assert not record.infra_error
    record.score.termination = Termination.INFRA_ERROR
    assert record.infra_error


def test_a_closed_run_leaves_no_wal_files_even_after_a_reader(tmp_path: Path) -> None:
    """A finished run folder holds the run's files only, and stays so once it has been read."""
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    with RunReader(tmp_path) as live:  # a viewer reading while the run is going
        assert live.count() == 1
    store.finalize({"success": {"rate": 1.0}})
    store.close()
    with RunReader(tmp_path) as reader:
        assert reader.count() == 1
    leftovers = {p.name for p in tmp_path.iterdir()} & {f"{DB_NAME}-wal", f"{DB_NAME}-shm"}
    assert leftovers == set()
    store = RunStore(tmp_path)  # a resume goes back to WAL and appends as before
    store.append(_record("b", 0))
    store.close()
    with RunReader(tmp_path) as reader:
        assert reader.keys() == {"a#0", "b#0"}


@pytest.mark.parametrize("batch", [1, 31, 32, 33, 100])
def test_batches_of_any_size_read_back_whole(tmp_path: Path, batch: int) -> None:
    """Rows go in a few dozen a statement at commit: each reads back with its own line."""
    store = RunStore(tmp_path, commit_every=batch)
    records = [_record(f"t{n % 3}", n, passed=n % 4 != 0, tokens=n) for n in range(75)]
    for record in records:
        store.append(record)
    store.close()
    with RunReader(tmp_path) as reader:
        assert reader.count() == 75
        assert {r.key: r for r in reader.records()} == {r.key: r for r in records}
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        seqs = [s for (s,) in conn.execute("SELECT seq FROM episodes ORDER BY seq")]
    assert seqs == list(range(1, 76))

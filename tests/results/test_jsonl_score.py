"""Each line of trajectories.jsonl carries its episode's score; older lines still read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from toolproof.results import DB_NAME, TRAJECTORIES, RunReader, RunStore
from toolproof.trajectory import Trajectory, jsonl

from .test_store import _record


def _store(run_dir: Path, *records: object) -> None:
    store = RunStore(run_dir)
    try:
        for record in records:
            store.append(record)  # type: ignore[arg-type]
        store.finalize({})
    finally:
        store.close()


def test_every_line_has_the_episode_score(tmp_path: Path) -> None:
    passed, failed = _record("a", 0, passed=True), _record("b", 0, passed=False)
    _store(tmp_path, failed, passed)
    lines = (tmp_path / TRAJECTORIES).read_text().splitlines()
    by_id = {json.loads(line)["episode_id"]: json.loads(line) for line in lines}
    assert by_id["a#0"]["score"] == json.loads(passed.score.model_dump_json())
    assert by_id["b#0"]["score"]["passed"] is False
    assert by_id["b#0"]["score"]["level"] == "fail"
    assert by_id["b#0"]["score"]["termination"] == "step_limit"
    # The line is still a trajectory first: its start names the episode, the file reads
    # back as trajectories, and the reader joins the same record as before.
    assert all(line.startswith('{"format_version":') for line in lines)
    assert [t.episode_id for t in jsonl.read(tmp_path / TRAJECTORIES)] == ["a#0", "b#0"]
    with RunReader(tmp_path) as reader:
        back = {r.key: r for r in reader.records()}
    assert back["a#0"] == passed
    assert back["b#0"] == failed


def test_a_run_written_before_the_score_was_on_the_line_reads_the_same(tmp_path: Path) -> None:
    record = _record("old", 1)
    _store(tmp_path, record)
    path = tmp_path / TRAJECTORIES
    # Rewrite the file as an older toolproof wrote it: the trajectory alone, same offsets
    # found again by key.
    old_line = record.trajectory.model_dump_json().encode() + b"\n"
    path.write_bytes(old_line)
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.execute("UPDATE episodes SET traj_offset = 0, traj_length = ?", (len(old_line),))
    db.commit()
    db.close()
    with RunReader(tmp_path) as reader:
        (back,) = list(reader.records())
    assert back == record
    assert "score" not in json.loads(path.read_text())
    assert Trajectory.model_validate_json(path.read_text()) == record.trajectory

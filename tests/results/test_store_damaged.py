"""A damaged run.db (truncated, overwritten) is refused with a message, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.cli import main
from toolproof.results import DB_NAME, TRAJECTORIES, RunDirError, RunReader, RunStore

from .test_store import _record


def _run_with_episodes(run_dir: Path, n: int = 40) -> None:
    store = RunStore(run_dir)
    store.set_meta({"config": {"agent": "oracle", "suite": "core"}})
    for i in range(n):
        store.append(_record(f"task-{i:03}", 0))
    store.close()


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 8 * 4096, "the test needs a database of several pages"
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_run_db_is_refused_by_the_writer_and_left_as_it_was(tmp_path: Path) -> None:
    _run_with_episodes(tmp_path)
    db = tmp_path / DB_NAME
    _truncate(db)
    before = db.read_bytes()
    with pytest.raises(RunDirError) as caught:
        RunStore(tmp_path)
    message = str(caught.value)
    assert str(db) in message and "truncated, damaged or not SQLite" in message
    assert str(tmp_path / TRAJECTORIES) in message  # what is kept, and where
    assert "Start a new run" in message
    assert db.read_bytes() == before  # nothing written to the damaged file


def test_a_run_db_of_garbage_is_refused_by_reader_and_writer(tmp_path: Path) -> None:
    db = tmp_path / DB_NAME
    db.write_bytes(b"\x00garbage, not sqlite\xff" * 500)
    for open_it in (RunReader, RunStore):
        with pytest.raises(RunDirError, match=r"run\.db: not a readable toolproof run database"):
            open_it(tmp_path)
    assert db.read_bytes() == b"\x00garbage, not sqlite\xff" * 500


def test_an_empty_run_db_is_not_a_run_to_read(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_bytes(b"")
    with pytest.raises(RunDirError, match="no such table: meta"):
        RunReader(tmp_path)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_resume_of_a_damaged_run_exits_2_with_the_file_named(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_with_episodes(tmp_path)
    db = tmp_path / DB_NAME
    if damage == "truncate":
        _truncate(db)
    else:
        db.write_bytes(b"SQLite format 3\x00" + b"\xee" * 20000)
    with pytest.raises(SystemExit) as caught:
        main(["run", "--resume", str(tmp_path)])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert str(db) in err and "Traceback" not in err

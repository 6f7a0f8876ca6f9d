"""What the store does with what it cannot write, and with what it cannot read back.

A record that cannot be encoded is refused before anything is written (the run stores a
stand-in and goes on); a run folder that cannot be written is a ``RunDirError`` naming it;
a damaged trajectory line is a ``DamagedRecord`` naming the file and the episode, which a
reader can skip.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from toolproof.results import (
    DB_NAME,
    TRAJECTORIES,
    DamagedRecord,
    RunDirError,
    RunReader,
    RunStore,
    UnstorableRecord,
    encode_record,
)
from toolproof.trajectory import Message, Usage

from .test_store import _record


def _stored(run_dir: Path) -> tuple[int, int]:
    """(rows, bytes of trajectories.jsonl)."""
    with sqlite3.connect(run_dir / DB_NAME) as conn:
        (rows,) = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()
    return rows, (run_dir / TRAJECTORIES).stat().st_size


def _with_surrogate(task_id: str) -> Any:
    record = _record(task_id, 0)
    record.trajectory.final_answer = "done \udcff"
    return record


def _with_huge_tokens(task_id: str) -> Any:
    record = _record(task_id, 0)
    record.trajectory.steps[0].usage = Usage.model_construct(
        input_tokens=2**70, output_tokens=0, cost_usd=None, estimated=False
    )
    return record


@pytest.mark.parametrize(
    ("bad", "said"),
    [(_with_surrogate, "surrogates not allowed"), (_with_huge_tokens, "does not fit SQLite")],
)
def test_a_record_that_cannot_be_written_is_refused_and_nothing_is_written(
    tmp_path: Path, bad: Any, said: str
) -> None:
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    before = _stored(tmp_path)
    with pytest.raises(UnstorableRecord, match=said) as caught:
        store.append(bad("b"))
    assert caught.value.key == "b#0"
    assert "\udcff" not in str(caught.value)  # the message itself can be written anywhere
    assert _stored(tmp_path) == before
    store.append(_record("c", 0))  # the store goes on
    store.close()
    with RunReader(tmp_path) as reader:
        assert [r.key for r in reader.records()] == ["a#0", "c#0"]


def test_encode_record_is_what_append_checks() -> None:
    line, row = encode_record(_record("a", 0))
    assert line.endswith(b"\n") and row[0] == "a"
    with pytest.raises(UnstorableRecord):
        encode_record(_with_surrogate("a"))


def test_a_run_folder_under_a_file_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(RunDirError, match="cannot write the run there") as caught:
        RunStore(tmp_path / "file" / "run")
    assert str(tmp_path / "file" / "run") in str(caught.value)


def test_a_read_only_run_database_is_said_to_be_read_only_not_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore(tmp_path)
    store.append(_record("a", 0))
    store.close()
    connect = sqlite3.connect

    def read_only(path: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        return connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)  # as on a ro mount

    monkeypatch.setattr(sqlite3, "connect", read_only)
    with pytest.raises(RunDirError, match="cannot write the run there") as caught:
        RunStore(tmp_path)
    assert "readonly database" in str(caught.value)
    assert "damaged" not in str(caught.value)


def test_a_write_that_fails_keeps_no_row_pointing_at_a_missing_line(tmp_path: Path) -> None:
    store = RunStore(tmp_path, commit_every=100)
    store.append(_record("a", 0))

    class Full:
        closed = False

        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

        def flush(self) -> None:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            self.closed = True

    store._jsonl.close()
    store._jsonl = Full()  # type: ignore[assignment]
    with pytest.raises(RunDirError, match="No space left on device"):
        store.append(_record("b", 0))
    store.close()
    with RunReader(tmp_path) as reader:
        assert reader.count() == 0  # a#0 was pending with b#0: both run again on resume


def _damage(run_dir: Path, how: str) -> None:
    path = run_dir / TRAJECTORIES
    data = path.read_bytes()
    first = data.index(b"\n") + 1  # the second line (b#0) starts here
    if how == "truncated":
        path.write_bytes(data[:-20])
    elif how == "garbage":
        path.write_bytes(data[: first + 40] + b"\x00\xff garbage \xfe" + data[first + 52 :])
    elif how == "invalid utf-8":
        at = data.index(b'"content":"done"', first) + 11
        path.write_bytes(data[:at] + b"\xff\xfe" + data[at + 2 :])
    elif how == "surrogate escape":
        at = data.index(b'"content":"done"', first) + 11
        path.write_bytes(data[:at] + b"\\udcff" + data[at + 4 :])
    elif how == "missing":
        path.unlink()


DAMAGE = ["truncated", "garbage", "invalid utf-8", "surrogate escape", "missing"]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_trajectory_line_is_named_not_a_traceback(tmp_path: Path, how: str) -> None:
    store = RunStore(tmp_path)
    for record in (_record("a", 0), _record("b", 0)):
        store.append(record)
    store.close()
    _damage(tmp_path, how)
    with RunReader(tmp_path) as reader:
        with pytest.raises(DamagedRecord) as caught:
            list(reader.records())
        assert caught.value.key == "b#0" or how == "missing"
        assert str(tmp_path / TRAJECTORIES) in str(caught.value)
        assert "--resume" in str(caught.value)
        damaged: list[DamagedRecord] = []
        kept = [r.key for r in reader.records(damaged.append)]
    assert {d.key for d in damaged} | set(kept) == {"a#0", "b#0"}
    assert "b#0" in {d.key for d in damaged}


def test_forget_drops_rows_and_finalize_drops_their_lines(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for record in (_record("a", 0), _record("b", 0), _record("c", 0)):
        store.append(record)
    store.forget({"b#0"})
    store.finalize({})
    store.close()
    with RunReader(tmp_path) as reader:
        assert [r.key for r in reader.records()] == ["a#0", "c#0"]
    lines = (tmp_path / TRAJECTORIES).read_bytes().splitlines()
    assert len(lines) == 2


def test_a_line_shifted_by_an_edit_before_it_is_found_again(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for record in (_record("a", 0), _record("b", 0)):
        store.append(record)
    store.close()
    path = tmp_path / TRAJECTORIES
    data = path.read_bytes()
    path.write_bytes(data[:10] + data[20:])  # a#0's line loses 10 bytes; b#0's moves back
    RunStore(tmp_path).close()  # the writer's check finds b#0 again by its key, a#0 lost
    with RunReader(tmp_path) as reader:
        damaged: list[DamagedRecord] = []
        kept = [r.key for r in reader.records(damaged.append)]
    assert kept == ["b#0"]  # read back whole, not from its old offset (10 bytes in)
    assert damaged == []  # a#0 was dropped from run.db: a resume runs it again


def test_a_record_written_through_a_surrogate_free_message_reads_back(tmp_path: Path) -> None:
    record = _record("a", 0)
    record.trajectory.steps[0].message = Message(role="assistant", content="\\udcff as text")
    store = RunStore(tmp_path)
    store.append(record)
    store.close()
    with RunReader(tmp_path) as reader:
        assert reader.record("a#0") == record
    assert os.path.getsize(tmp_path / TRAJECTORIES) > 0


def _with_null_category(task_id: str) -> Any:
    record = _record(task_id, 0)
    record.task.category = None  # type: ignore[assignment]  # as model_construct could
    return record


def _with_unbindable_fraction(task_id: str) -> Any:
    record = _record(task_id, 0)
    record.score.fraction = [0.5]  # type: ignore[assignment]
    return record


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # built wrong on purpose
@pytest.mark.parametrize(
    ("bad", "said"),
    [(_with_null_category, "column 12 is None"), (_with_unbindable_fraction, "list in a column")],
)
def test_a_row_sqlite_would_refuse_is_refused_at_append_not_at_the_batchs_commit(
    tmp_path: Path, bad: Any, said: str
) -> None:
    """Rows are inserted at commit, with their batch: a row that would fail there is caught
    when appended, so it never takes its batch down with it."""
    store = RunStore(tmp_path, commit_every=100)
    store.append(_record("a", 0))
    with pytest.raises(UnstorableRecord, match=said):
        store.append(bad("b"))
    store.append(_record("c", 0))
    store.close()
    with RunReader(tmp_path) as reader:
        assert [r.key for r in reader.records()] == ["a#0", "c#0"]


def test_a_commit_that_fails_keeps_its_batch_for_the_next(tmp_path: Path) -> None:
    store = RunStore(tmp_path, commit_every=100)
    for epoch in range(40):  # more than one statement's rows
        store.append(_record("a", epoch))

    class FailsOnce:
        """The run's connection, whose first commit fails as on a full disk."""

        def __init__(self, db: sqlite3.Connection) -> None:
            self.db, self.failed = db, False

        def __getattr__(self, name: str) -> Any:
            return getattr(self.db, name)

        def commit(self) -> None:
            if not self.failed:
                self.failed = True
                raise sqlite3.OperationalError("database or disk is full")
            self.db.commit()

    real = store._db
    store._db = FailsOnce(real)  # type: ignore[assignment]
    with pytest.raises(RunDirError, match="disk is full"):
        store.commit()
    assert store.pending == 40
    store.commit()
    store._db = real
    store.close()
    with RunReader(tmp_path) as reader:
        assert sorted(r.epoch for r in reader.records()) == list(range(40))
        assert reader.count() == 40


def test_a_record_whose_key_is_not_text_is_refused_at_append(tmp_path: Path) -> None:
    record = _record("a", 0)
    record.key = None  # type: ignore[assignment]  # as model_construct could
    store = RunStore(tmp_path, commit_every=100)
    with pytest.raises(UnstorableRecord, match="episode key is not a str"):
        store.append(record)
    store.append(_record("b", 0))
    store.close()
    with RunReader(tmp_path) as reader:
        assert [r.key for r in reader.records()] == ["b#0"]

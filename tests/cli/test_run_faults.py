"""``toolproof run`` when the run folder cannot be written, or a resumed one is damaged.

A folder that cannot be written (read-only, not a folder) exits 2 with a message naming it
(docs/cli.md, exit codes), never a traceback; ``--resume`` of a run whose
``trajectories.jsonl`` is damaged (cut short, garbage bytes, not UTF-8, a lone surrogate
escape, deleted) runs the damaged episodes again and finishes, naming the file.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.results import TRAJECTORIES
from toolproof_helpers import CliResult, make_task, write_suite

Invoke = Callable[..., CliResult]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return write_suite(tmp_path / "suite", [make_task(id=f"stock-{n}") for n in "abc"])


def _no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.out + result.err, result.err


def test_a_run_folder_under_a_file_exits_2_naming_it(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "run"
    result = invoke("run", suite, "--agent", "oracle", "-o", out, "--progress", "none")
    _no_traceback(result)
    assert result.code == 2, result.err
    assert f"{out}: cannot write the run there (Not a directory)" in result.err


def test_a_read_only_run_folder_exits_2_naming_it(
    invoke: Invoke, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ro" / "run"
    mkdir = os.mkdir

    def read_only(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        if str(path).startswith(str(tmp_path / "ro")):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", read_only)  # root may write anywhere: a ro mount is needed
    result = invoke("run", suite, "--agent", "oracle", "-o", out, "--progress", "none")
    _no_traceback(result)
    assert result.code == 2, result.err
    assert f"{out}: cannot write the run there (Read-only file system)" in result.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_folder_without_write_permission_exits_2(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    try:
        result = invoke(
            "run", suite, "--agent", "oracle", "-o", folder / "run", "--progress", "none"
        )
    finally:
        folder.chmod(0o755)
    _no_traceback(result)
    assert result.code == 2 and "cannot write the run there" in result.err


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    second = data.index(b"\n") + 1
    if how == "cut short":
        path.write_bytes(data[:-30])
    elif how == "garbage bytes":
        path.write_bytes(data[: second + 60] + b"\x00\xfe\xff garbage" + data[second + 73 :])
    elif how == "not utf-8":
        at = data.index(b'"content":"', second) + 11
        path.write_bytes(data[:at] + b"\xff" + data[at + 1 :])
    elif how == "a lone surrogate escape":
        at = data.index(b'"content":"', second) + 11
        path.write_bytes(data[:at] + b"\\udcff" + data[at:])
    elif how == "deleted":
        path.unlink()


@pytest.mark.parametrize(
    "how", ["cut short", "garbage bytes", "not utf-8", "a lone surrogate escape", "deleted"]
)
def test_resume_of_a_run_with_a_damaged_trajectories_file_finishes(
    invoke: Invoke, suite: Path, tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = tmp_path / "run"
    first = invoke("run", suite, "--agent", "oracle", "-o", run_dir, "--progress", "none")
    assert first.code == 0, first.err
    _damage(run_dir / TRAJECTORIES, how)
    shown = invoke("show", run_dir, "--failures")
    _no_traceback(shown)
    if shown.code != 0:  # what a reader cannot read back is named, never a traceback
        assert shown.code == 2 and str(run_dir / TRAJECTORIES) in shown.err, shown.err
    with caplog.at_level(logging.WARNING):
        resumed = invoke("run", "--resume", run_dir, "--progress", "none")
    _no_traceback(resumed)
    assert resumed.code == 0, resumed.err
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(run_dir / TRAJECTORIES) in text for text in warned), warned
    with sqlite3.connect(run_dir / "run.db") as conn:
        (stored,) = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()
    assert stored == 3
    again = invoke("show", run_dir, "--failures")
    assert again.code == 0, again.err
    assert "0 failed episodes of 3 scored" in again.out, again.out

"""One writer per run directory: ``RunLock`` (an flock held for the writer's life)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolproof.results import LOCK_NAME, RunLock, RunLockedError, RunStore

HOLD = (
    "import sys; from pathlib import Path; from toolproof.results import RunLock; "
    "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); sys.stdin.read()"
)


def _holder(run_dir: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def test_the_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    outer = RunLock(tmp_path / "run").acquire()
    store = RunStore(tmp_path / "run")  # takes the same lock again: no deadlock, no refusal
    store.close()
    process = subprocess.run(
        [sys.executable, "-c", HOLD.replace("sys.stdin.read()", "pass"), str(tmp_path / "run")],
        capture_output=True,
        text=True,
    )
    assert process.returncode != 0 and "in use by another toolproof process" in process.stderr
    outer.release()
    outer.release()  # idempotent
    RunStore(tmp_path / "run").close()  # free again


def test_another_process_is_refused_until_the_holder_dies(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    process = _holder(run_dir)
    with pytest.raises(RunLockedError, match=rf"pid {process.pid}\)"):
        RunStore(run_dir)
    process.kill()  # however it ends, the kernel drops the lock
    process.communicate()
    RunStore(run_dir).close()


def test_a_hostile_lock_file_shows_no_more_than_a_pid(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    process = _holder(run_dir)
    (run_dir / LOCK_NAME).write_text("\x1b[2J12\n34 evil")  # the holder's pid, overwritten
    try:
        with pytest.raises(RunLockedError) as caught:
            RunLock(run_dir).acquire()
        assert "(pid unknown)" in str(caught.value) and "\x1b" not in str(caught.value)
    finally:
        process.communicate(input="")


def test_a_failed_open_gives_the_lock_back(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.db").mkdir()  # sqlite cannot open a folder
    with pytest.raises(Exception, match="unable to open"):
        RunStore(run_dir)
    os.rmdir(run_dir / "run.db")
    RunStore(run_dir).close()

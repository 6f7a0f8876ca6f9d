"""Run folders: unique by default, never reused by accident, one writer at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.cli._common import default_run_dir
from toolproof_helpers import CliResult, make_task

Invoke = Callable[..., CliResult]
ORACLE = ["--agent", "oracle", "-q"]


def test_default_folders_of_runs_started_in_one_second_differ(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len({default_run_dir("core", "oracle") for _ in range(50)}) == 50
    root = suite_dir([make_task()])
    monkeypatch.chdir(tmp_path)
    first, second = invoke("run", root, *ORACLE), invoke("run", root, *ORACLE)
    assert first.code == 0 and second.code == 0, first.err + second.err
    folders = sorted((tmp_path / "runs").iterdir())
    assert len(folders) == 2 and all((f / "summary.json").is_file() for f in folders)


def test_a_new_run_into_a_used_folder_is_refused(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = suite_dir([make_task()])
    run_dir = tmp_path / "run"
    assert invoke("run", root, *ORACLE, "-o", run_dir).code == 0
    again = invoke("run", root, *ORACLE, "-o", run_dir)
    assert again.code == 2
    assert f"{run_dir} is not empty" in again.err
    assert f"--resume {run_dir}" in again.err and "another -o folder" in again.err
    assert "Traceback" not in again.err


def test_an_empty_existing_folder_may_be_used(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    (tmp_path / "run").mkdir()
    assert invoke("run", suite_dir([make_task()]), *ORACLE, "-o", tmp_path / "run").code == 0


@pytest.mark.parametrize("kind", ["file", "not a run"])
def test_hostile_folders_are_refused_with_a_message(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "target"
    if kind == "file":
        target.write_text("not a folder")
        result = invoke("run", suite_dir([make_task()]), *ORACLE, "-o", target)
        assert "it is a file" in result.err
    else:
        target.mkdir()
        (target / "notes.txt").write_text("mine")
        result = invoke("run", "--resume", target, "-q")
        assert "is not a toolproof run" in result.err and "--resume takes" in result.err
        assert (target / "notes.txt").read_text() == "mine"
    assert result.code == 2
    assert "Traceback" not in result.err


def test_a_bad_agent_leaves_no_run_folder(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    result = invoke("run", suite_dir([make_task()]), "--agent", "nope", "-q", "-o", tmp_path / "r")
    assert result.code == 2
    assert not (tmp_path / "r").exists()


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Another live process that holds a run folder's lock until the test ends."""
    processes: list[subprocess.Popen[str]] = []

    def hold(run_dir: Path) -> None:
        code = (
            "import sys; from pathlib import Path; from toolproof.results import RunLock; "
            "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); sys.stdin.read()"
        )
        process = subprocess.Popen(
            [sys.executable, "-c", code, str(run_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "TOOLPROOF_NO_PLUGINS": "1"},
        )
        processes.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == "held"

    yield hold
    for process in processes:
        process.communicate(input="", timeout=30)


def test_a_resume_while_the_run_is_alive_is_refused(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path, holder: Callable[[Path], None]
) -> None:
    run_dir = tmp_path / "run"
    assert invoke("run", suite_dir([make_task()]), *ORACLE, "-k", "2", "-o", run_dir).code == 0
    before = (run_dir / "summary.json").read_text()
    holder(run_dir)
    result = invoke("run", "--resume", run_dir, "-q")
    assert result.code == 2
    assert "in use by another toolproof process (pid " in result.err
    assert "one writer at a time" in result.err and "Traceback" not in result.err
    assert (run_dir / "summary.json").read_text() == before


def test_a_run_into_a_folder_being_written_is_refused(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path, holder: Callable[[Path], None]
) -> None:
    run_dir = tmp_path / "run"
    holder(run_dir)  # the other process has only created the folder and its lock so far
    result = invoke("run", suite_dir([make_task()]), *ORACLE, "-o", run_dir)
    assert result.code == 2 and "in use by another toolproof process" in result.err
    assert sorted(p.name for p in run_dir.iterdir()) == ["run.lock"]  # nothing written


def test_a_crash_while_finalizing_resumes_to_the_same_result(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    assert (
        invoke("run", suite_dir([make_task(), make_task(id="b")]), *ORACLE, "-o", run_dir).code == 0
    )
    want = (run_dir / "trajectories.jsonl").read_text()
    # What a kill during finalize leaves, and worse: a half-written tmp file, no summary, and a
    # JSONL cut short (finalize replaces it atomically; only outside damage tears it).
    (run_dir / "trajectories.jsonl.tmp").write_text('{"half": ')
    (run_dir / "summary.json.tmp").write_text("{")
    (run_dir / "summary.json").unlink()
    (run_dir / "trajectories.jsonl").write_text(want[: len(want) // 2])
    result = invoke("run", "--resume", run_dir, "-q")
    assert result.code == 0, result.err
    # The episode whose line was lost ran again: same episodes, same play, new timings.
    assert _plays(run_dir / "trajectories.jsonl") == _plays_of(want)
    assert (run_dir / "summary.json").is_file()
    assert not (run_dir / "trajectories.jsonl.tmp").exists()


def _plays_of(text: str) -> list[tuple[Any, ...]]:
    """Each line's episode, calls and answer (what a rerun must repeat; timings differ)."""
    plays = []
    for line in text.splitlines():
        data = json.loads(line)
        calls = [
            (c["name"], json.dumps(c["arguments"], sort_keys=True))
            for step in data["steps"]
            for c in step["message"]["tool_calls"]
        ]
        plays.append((data["episode_id"], tuple(calls), data["final_answer"]))
    return plays


def _plays(path: Path) -> list[tuple[Any, ...]]:
    return _plays_of(path.read_text())

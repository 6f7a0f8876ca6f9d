"""``toolproof run --resume``: a killed run finishes with exactly the uninterrupted results."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import toolproof_test_agents as test_agents

from toolproof.spec import load_suite, resolve_suite_path
from toolproof_helpers import (
    FIXTURES,
    CliResult,
    make_task,
    run_results,
    stored_count,
    stored_sequence,
)

Invoke = Callable[..., CliResult]
AGENT = "python:toolproof_test_agents:SlowRandom"
TASKS = [f"--task={task.id}" for task in load_suite("core").tasks[:12]]
"""A dozen core tasks (36 episodes): enough to kill a run halfway, quick to run twice."""
RUN = ["--agent", AGENT, "--epochs", "3", "--seed", "5", "--parallel", "1", *TASKS]
"""``toolproof run CORE_COPY ...`` (a copy of core: edits to the real one cannot interfere)."""


@pytest.fixture
def core_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(resolve_suite_path("core"), tmp_path / "core"))


@pytest.fixture
def killed_run(tmp_path: Path, core_copy: Path) -> Iterator[Path]:
    """A run of ``RUN`` SIGKILLed after a few episodes were stored."""
    run_dir = tmp_path / "killed"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")]),
        test_agents.SLEEP_ENV: "0.05",
        "TOOLPROOF_NO_PLUGINS": "1",
    }
    command = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]
    process = subprocess.Popen(
        [*command, "run", str(core_copy), *RUN, "-o", str(run_dir), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while stored_count(run_dir) < 5:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the run stored nothing within 60 s"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        assert process.returncode == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
    yield run_dir


def test_a_killed_run_resumes_to_the_uninterrupted_result(
    killed_run: Path,
    core_copy: Path,
    invoke: Invoke,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(test_agents.SLEEP_ENV, raising=False)
    stored = stored_count(killed_run)
    assert not (killed_run / "summary.json").exists()
    before = stored_sequence(killed_run)

    resumed = invoke("run", "--resume", killed_run, "-q")
    assert resumed.code == 0, resumed.err
    reference = invoke("run", core_copy, *RUN, "-o", tmp_path / "reference", "-q")
    assert reference.code == 0, reference.err

    summary, trajectories = run_results(killed_run)
    want_summary, want_trajectories = run_results(tmp_path / "reference")
    assert stored < summary["episodes"]["planned"], "the run finished before it was killed"
    assert summary["episodes"]["finished"] == summary["episodes"]["planned"]
    assert summary == want_summary
    assert trajectories == want_trajectories
    after = stored_sequence(killed_run)
    assert {key: after[key] for key in before} == before  # stored episodes were not run again


@pytest.fixture
def partial_run(suite_dir: Callable[..., Path], tmp_path: Path, invoke: Invoke) -> Path:
    root = suite_dir([make_task(), make_task(id="other")])
    run_dir = tmp_path / "run"
    result = invoke("run", root, "--agent", "oracle", "--epochs", "2", "-o", run_dir, "-q")
    assert result.code == 0, result.err
    return run_dir


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--epochs", "3"], "epochs: the run used 2, now 3"),
        (["--agent", "noop"], "agent: the run used 'oracle', now 'noop'"),
        (["--seed", "1"], "seed: the run used None, now 1"),
    ],
)
def test_resume_with_another_configuration_is_refused(
    partial_run: Path, invoke: Invoke, args: list[str], said: str
) -> None:
    result = invoke("run", "--resume", partial_run, *args, "-q")
    assert result.code == 2
    assert said in result.err
    assert "resume with the original configuration" in result.err
    assert "Traceback" not in result.err


def test_resume_of_a_changed_suite_is_refused(partial_run: Path, invoke: Invoke) -> None:
    suite = json.loads((partial_run / "summary.json").read_text())["config"]["suite"]
    task_file = Path(suite) / "tasks" / "other.yaml"
    task_file.write_text(task_file.read_text() + "# an edit\n")
    result = invoke("run", "--resume", partial_run, "-q")
    assert result.code == 2
    assert "suite: the suite's files changed since the run started" in result.err
    assert "Traceback" not in result.err


def test_resume_of_a_finished_run_changes_nothing(partial_run: Path, invoke: Invoke) -> None:
    before = run_results(partial_run)
    assert invoke("run", "--resume", partial_run, "-q").code == 0
    assert run_results(partial_run) == before

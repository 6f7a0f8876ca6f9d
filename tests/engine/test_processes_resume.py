"""A run with worker processes and many episodes in flight, SIGKILLed, resumes to the result
of a run never killed: stored episodes are not run again, none is counted twice.

With many in flight the store commits in batches (``COMMIT_EVERY``, ``COMMIT_DELAY_S``), so
the kill may lose episodes that had finished and were not yet committed: they run again.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import toolproof_test_agents as test_agents

from toolproof.spec import load_suite, resolve_suite_path
from toolproof_helpers import (
    FIXTURES,
    CliResult,
    run_results,
    stored_count,
    stored_sequence,
)

AGENT = "python:toolproof_test_agents:SlowRandom"
TASKS = [f"--task={task.id}" for task in load_suite("core").tasks[:8]]
RUN = ["--agent", AGENT, "--epochs", "5", "--seed", "3", "--parallel", "8", "--workers", "2"]
"""40 episodes, 8 in flight over two worker processes."""


def _kill_midway(core: Path, run_dir: Path) -> None:
    """Start the run in a process group of its own; SIGKILL the group (the run and its
    workers) once some episodes are stored."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")]),
        test_agents.SLEEP_ENV: "0.1",  # a few seconds of run: killed well before its end
        "TOOLPROOF_NO_PLUGINS": "1",
    }
    command = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]
    process = subprocess.Popen(
        [*command, "run", str(core), *RUN, *TASKS, "-o", str(run_dir), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while stored_count(run_dir) < 10:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the run stored nothing within 90 s"
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def test_a_run_with_workers_killed_mid_batch_resumes_to_the_uninterrupted_result(
    tmp_path: Path, invoke: Callable[..., CliResult]
) -> None:
    core = Path(shutil.copytree(resolve_suite_path("core"), tmp_path / "core"))
    killed = tmp_path / "killed"
    _kill_midway(core, killed)
    stored = stored_count(killed)
    before = stored_sequence(killed)
    assert not (killed / "summary.json").exists()

    resumed = invoke("run", "--resume", killed, "-q")
    assert resumed.code == 0, resumed.err
    reference = invoke("run", core, *RUN, *TASKS, "-o", tmp_path / "reference", "-q")
    assert reference.code == 0, reference.err

    summary, trajectories = run_results(killed)
    want_summary, want_trajectories = run_results(tmp_path / "reference")
    planned = summary["episodes"]["planned"]
    assert stored < planned, "the run finished before it was killed"
    assert summary["episodes"]["finished"] == planned == 40
    assert summary == want_summary
    assert trajectories == want_trajectories
    keys = [t["episode_id"] for t in trajectories]
    assert len(keys) == len(set(keys)) == planned  # each episode stored once
    after = stored_sequence(killed)
    assert {key: after[key] for key in before} == before  # stored episodes were not run again

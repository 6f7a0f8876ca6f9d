"""Ctrl-C during ``toolproof run``: a real subprocess gets a real SIGINT.

The first signal stops the run soon whatever the agent (the built-in ones never
yield to the event loop), keeps the finished episodes, writes a summary marked
incomplete and prints the exact resume command; a second one quits at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import toolproof_test_agents as test_agents

from toolproof_helpers import FIXTURES, CliResult, stored_count

Invoke = Callable[..., CliResult]
COMMAND = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]


def _env(sleep: str | None = None) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")]),
        "TOOLPROOF_NO_PLUGINS": "1",
    }
    env.pop(test_agents.SLEEP_ENV, None)
    if sleep is not None:
        env[test_agents.SLEEP_ENV] = sleep
    return env


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start ``toolproof run ...`` in a subprocess; whatever is left is killed at the end."""
    started: list[subprocess.Popen[str]] = []

    def run(*args: str | Path, sleep: str | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [*COMMAND, "run", *map(str, args)],
            env=_env(sleep),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        return process

    yield run
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _wait_stored(process: subprocess.Popen[str], run_dir: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    while stored_count(run_dir) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"fewer than {count} episodes stored within 120 s"
        time.sleep(0.05)


def _wait_line(stream: IO[str] | None, text: str) -> list[str]:
    """Read lines until one contains ``text`` (the event the test waits for)."""
    assert stream is not None
    seen = []
    for line in stream:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never printed; got {seen}")


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())  # type: ignore[no-any-return]


def test_ctrl_c_stops_a_builtin_agent_run_with_a_partial_summary(
    start: Callable[..., subprocess.Popen[str]], tmp_path: Path, invoke: Invoke
) -> None:
    run_dir = tmp_path / "run"
    # 155 tasks x 40 epochs: minutes of oracle episodes that never yield to the event loop.
    process = start("core", "--agent", "oracle", "-k", "40", "-o", run_dir, "-q")
    _wait_stored(process, run_dir, 5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)

    assert process.returncode == 3, err
    assert "Traceback" not in err and "never retrieved" not in err
    assert f"Continue with: toolproof run --resume {run_dir}" in err
    episodes = _summary(run_dir)["episodes"]
    assert episodes["complete"] is False
    assert episodes["finished"] == stored_count(run_dir)
    assert episodes["finished"] < episodes["planned"] / 4, "the run went on after Ctrl-C"
    assert f"results: {run_dir}" in out


def test_a_stopped_run_resumes_to_completion(
    start: Callable[..., subprocess.Popen[str]], tmp_path: Path, invoke: Invoke
) -> None:
    run_dir = tmp_path / "run"
    agent = "python:toolproof_test_agents:SlowRandom"  # awaits asyncio.sleep every turn
    process = start(
        "core", "--agent", agent, "-t", "stock-*", "-k", "4", "-o", run_dir, sleep="0.2"
    )
    _wait_stored(process, run_dir, 2)
    process.send_signal(signal.SIGTERM)  # what CI runners and `kill` send
    _, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    assert "INCOMPLETE" in err
    stopped = _summary(run_dir)["episodes"]
    assert stopped["complete"] is False and stopped["finished"] >= 2

    resumed = invoke("run", "--resume", run_dir, "-q")
    assert resumed.code == 0, resumed.err
    episodes = _summary(run_dir)["episodes"]
    assert episodes["complete"] is True and episodes["finished"] == episodes["planned"]


def test_a_second_ctrl_c_quits_at_once_without_a_traceback(
    start: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    agent = "python:toolproof_test_agents:Stubborn"  # blocks the event loop 30 s a turn
    process = start(
        "core", "--agent", agent, "-t", "stock-*", "-o", run_dir, "--progress", "plain", sleep="30"
    )
    _wait_line(process.stderr, "already done")  # the plain progress's first line: running
    process.send_signal(signal.SIGINT)
    _wait_line(process.stderr, "stopping: no new episodes")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=20)  # well before the agent's 30 s turn ends
    assert process.returncode == 130
    assert f"Continue with: toolproof run --resume {run_dir}" in err
    assert "Traceback" not in err and "never retrieved" not in err

"""A worker process that dies under its episodes (``--workers N``): decided in one place,
``faults.worker_death_outcome`` (ARCHITECTURE.md, invariant 8).

With agent code in the worker (a ``python:`` agent), the episodes in flight run again each
alone in a fresh worker; one whose solo worker dies too is the agent's ``agent_error``, in
the denominator, and the others (which only shared the worker) are not charged. With only
toolproof's code in the worker (a built-in agent), a death is a witnessed infra fault,
retried as before.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import EpisodeJob, RunConfig
from toolproof.engine.executor import Worker
from toolproof.engine.faults import OWN_CODE_KINDS, worker_death_outcome
from toolproof.engine.processes import ProcessExecutor
from toolproof.results import EpisodeRecord
from toolproof.trajectory import Termination
from toolproof_helpers import CliResult, make_task

Invoke = Callable[..., CliResult]
AGENTS = "python:toolproof_worker_death_agents"


@pytest.fixture
def suite(suite_dir: Callable[..., Path]) -> Path:
    return suite_dir([make_task(id="a"), make_task(id="b")])


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())  # type: ignore[no-any-return]


def _errors(run_dir: Path) -> dict[str, tuple[str, str | None]]:
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return {
        t["episode_id"]: (t["termination"], t["error"])
        for t in map(json.loads, lines)
        if t["termination"] != "completed"
    }


@pytest.mark.parametrize(
    ("name", "cause"),
    [("quitter", "exit 1"), ("garbler", "not a record to its records pipe")],
)
def test_an_agent_that_ends_its_worker_fails_that_episode_in_the_denominator(
    invoke: Invoke, suite: Path, tmp_path: Path, name: str, cause: str
) -> None:
    """The red team's quitter (``os._exit(1)`` in task b epoch 0) and an agent that writes
    to its worker's records pipe: 7 of 8, not 7 of 7; the run completes (exit 0, as any run
    whose failures are the agent's) and no innocent episode is charged."""
    run_dir = tmp_path / name
    result = invoke(
        "run", suite, "--agent", f"{AGENTS}:{name}", "--workers", "2", "--parallel", "4",
        "--epochs", "4", "--no-snapshots", "-o", run_dir, "--progress", "none",
    )  # fmt: skip
    assert result.code == 0, result.err
    summary = _summary(run_dir)
    assert (summary["success"]["successes"], summary["success"]["n"]) == (7, 8)
    assert summary["episodes"]["infra_errors"] == 0
    assert summary["terminations"]["agent_error"] == 1
    errors = _errors(run_dir)
    assert list(errors) == ["b#0"]
    termination, error = errors["b#0"]
    assert termination == "agent_error"
    assert error is not None and error.startswith("the agent's process died: ")
    assert cause in error


def _run_one(config: RunConfig, kill: bool) -> EpisodeRecord:
    """Submit one job to a fresh executor; with ``kill``, SIGKILL its worker (from the test:
    a death no agent caused) while the job is in flight (the worker is still starting)."""

    async def run() -> EpisodeRecord:
        executor = ProcessExecutor(Worker(config, None), {"workers": 1})
        try:
            task = asyncio.create_task(executor.submit(EpisodeJob("a", 0)))
            if kill:
                while not executor.pids():
                    await asyncio.sleep(0)
                os.kill(executor.pids()[0], signal.SIGKILL)
            return await task
        finally:
            await executor.aclose()

    return asyncio.run(run())


def test_a_worker_killed_under_a_built_in_agent_is_infra_and_retried(
    suite: Path,
) -> None:
    config = RunConfig(suite=str(suite), agent="oracle", epochs=1, snapshots=False, retries=2)
    record = _run_one(config, kill=True)
    assert record.score.termination is Termination.COMPLETED and record.score.passed
    assert record.attempts == 2
    assert record.infra_errors == [record.infra_errors[0]]
    assert record.infra_errors[0].startswith("worker process died: signal 9")


def test_a_worker_killed_under_a_python_agent_runs_its_episode_again_alone_uncharged(
    suite: Path,
) -> None:
    config = RunConfig(
        suite=str(suite), agent=f"{AGENTS}:quitter", epochs=1, snapshots=False, retries=0
    )
    record = _run_one(config, kill=True)  # task a: the agent never quits there
    assert record.score.termination is Termination.COMPLETED and record.score.passed
    assert record.attempts == 2
    assert "signal 9" in record.infra_errors[0] and "run alone" in record.infra_errors[0]


def test_a_built_in_agents_worker_that_keeps_dying_ends_in_an_infra_error(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = RunConfig(suite=str(suite), agent="oracle", epochs=1, snapshots=False, retries=1)

    async def run() -> EpisodeRecord:
        executor = ProcessExecutor(Worker(config, None), {"workers": 1})
        monkeypatch.setattr(executor, "_hellos", ['{"config": "not json"}'])  # dies at once
        try:
            return await executor.submit(EpisodeJob("a", 0))
        finally:
            await executor.aclose()

    record = asyncio.run(run())
    assert record.score.termination is Termination.INFRA_ERROR
    assert record.attempts == 2
    assert all(e.startswith("worker process died: exit ") for e in record.infra_errors)


def test_the_decision_by_agent_kind() -> None:
    for kind in sorted(OWN_CODE_KINDS):
        for solo in (False, True):
            outcome = worker_death_outcome(f"{kind}:x", "signal 9", solo=solo)
            assert outcome is not None and outcome[0] is Termination.INFRA_ERROR
    for agent in ("python:m:A", "cmd:./agent", "langchain", "mcp:m:t", "some-plugin"):
        assert worker_death_outcome(agent, "exit 1", solo=False) is None
        outcome = worker_death_outcome(agent, "exit 1", solo=True)
        assert outcome is not None and outcome[0] is Termination.AGENT_ERROR
        assert outcome[1].startswith("the agent's process died: exit 1")

"""The runner's commits: a run folder that fails under the commit timer stops the run with its
error (a RunDirError naming the file), not a traceback logged by the event loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import toolproof_test_agents as test_agents

from toolproof.engine import RunConfig, Runner
from toolproof.results import RunDirError, RunStore
from toolproof_helpers import make_task


def test_a_commit_that_fails_under_the_timer_stops_the_run_with_its_error(
    suite_dir: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(test_agents.SLEEP_ENV, "0.05")  # episodes outlast the commit delay
    real_commit = RunStore.commit
    calls: list[int] = []

    def full_disk(store: RunStore) -> None:
        calls.append(1)
        if len(calls) == 1:  # the run's facts, stored before any episode
            return real_commit(store)
        raise RunDirError(f"cannot write the run there: {store.run_dir / 'run.db'}: disk full")

    monkeypatch.setattr(RunStore, "commit", full_disk)
    stored: list[str] = []
    config = RunConfig(
        suite=str(suite_dir([make_task()])),
        agent="python:toolproof_test_agents:SlowRandom",
        epochs=20,
    )
    runner = Runner(config, tmp_path / "run", parallel=1, on_episode=lambda r: stored.append(r.key))
    with (
        caplog.at_level(logging.ERROR, logger="asyncio"),
        pytest.raises(RunDirError, match="disk full"),
    ):
        asyncio.run(runner.run())
    assert not [r for r in caplog.records if r.name == "asyncio"]  # no callback traceback
    assert 0 < len(stored) < 20  # stopped at the episode after the failed commit

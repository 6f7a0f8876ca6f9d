"""Whole runs with a hostile in-process agent: the others finish, nothing is laundered.

The agents are in ``hostile_agents.py``: each plays the oracle, except on ``stock-sum``.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import resolve_suite_path
from toolproof_helpers import blocking_agents

HERE = Path(__file__).parent
TASKS = ["stock-sum", "stock-lookup", "hello-file", "calc-expression"]


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "core"
    shutil.copytree(resolve_suite_path("core"), root)
    config = yaml.safe_load((root / "suite.yaml").read_text())
    config["limits"].update(step_timeout_s=1.0)
    (root / "suite.yaml").write_text(yaml.safe_dump(config))
    with blocking_agents(HERE, "hostile_agents") as module:
        module.use_suite(str(root))
        yield root


def _run(suite: Path, agent: str, run_dir: Path, **extra: object) -> dict[str, EpisodeRecord]:
    import hostile_agents

    stored: list[str] = []

    def on_episode(record: EpisodeRecord) -> None:
        stored.append(record.key)
        if len(stored) == 2 * len(TASKS):  # all stored while the blocked agents held on
            hostile_agents.RELEASE.set()

    config = RunConfig(
        suite=str(suite), agent=f"python:hostile_agents:{agent}", tasks=TASKS, epochs=2, retries=2
    )
    asyncio.run(Runner(config, run_dir, parallel=8, on_episode=on_episode, **extra).run())
    with RunReader(run_dir) as reader:
        return {r.key: r for r in reader.records()}


@pytest.mark.parametrize("agent", ["SleepsInSyncAct", "SleepsInAsyncAct", "SpinsInAsyncAct"])
def test_a_blocking_agent_stalls_only_its_own_episodes(
    hostile: Path, tmp_path: Path, agent: str
) -> None:
    import hostile_agents

    started = time.monotonic()
    records = _run(hostile, agent, tmp_path / "run")
    elapsed = time.monotonic() - started
    assert len(records) == 8
    for key, record in records.items():
        if key.startswith("stock-sum#"):
            assert record.score.termination == "timeout", record.trajectory.error
            assert "took longer than 1s" in (record.trajectory.error or "")
            assert record.attempts == 1
        else:
            assert record.score.passed, (key, record.trajectory.error)
    # Every episode was stored while the blocked agents still held their threads (the
    # release comes from the last one stored); a stalled loop would have held each 30 s.
    assert hostile_agents.RELEASE.is_set()
    assert elapsed < hostile_agents.HOLD_S / 2, elapsed


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        ("ExitsOnTarget", "act() raised SystemExit: bye"),
        ("InterruptsOnTarget", "act() raised KeyboardInterrupt"),
        ("BadCallOnTarget", "turn.tool_calls[0].name must be a string, got int"),
        ("factory_exits", "making the agent hostile_agents:factory_exits raised SystemExit: 2"),
    ],
)
def test_a_hostile_agent_is_scored_not_retried_and_the_run_goes_on(
    hostile: Path, tmp_path: Path, agent: str, said: str
) -> None:
    records = _run(hostile, agent, tmp_path / "run")
    assert len(records) == 8
    for key, record in records.items():
        if key.startswith("stock-sum#"):
            assert record.score.termination == "agent_error"
            assert said in (record.trajectory.error or ""), record.trajectory.error
            assert (record.attempts, record.infra_errors) == (1, [])  # never retried
        else:
            assert record.score.passed, (key, record.trajectory.error)

"""The collector during a run: older generations paced, what came before frozen, all undone."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from toolproof.agents import AgentTurn, Observation, agent
from toolproof.engine import RunConfig, Runner
from toolproof.engine._collections import RUN_THRESHOLDS, paced_collections
from toolproof_helpers import make_task, write_suite

SEEN: list[tuple[tuple[int, int, int], int]] = []


class _Notes:
    async def act(self, observation: Observation) -> AgentTurn:
        SEEN.append((gc.get_threshold(), gc.get_freeze_count()))
        return AgentTurn(content="7")


@pytest.fixture
def noting_agent(restore_registries: None) -> str:
    @agent("tp-test-gc-notes")
    def build(spec: Any) -> Any:
        return lambda ctx: _Notes()

    return "tp-test-gc-notes"


def test_a_run_paces_the_collector_while_its_episodes_run_and_restores_it(
    tmp_path: Path, noting_agent: str
) -> None:
    suite = write_suite(tmp_path / "suite", [make_task()])
    before = gc.get_threshold()
    gc.set_threshold(500, 5, 5)
    try:
        SEEN.clear()
        config = RunConfig(suite=str(suite), agent=noting_agent, epochs=3)
        summary = asyncio.run(Runner(config, tmp_path / "run", parallel=2).run())
        assert summary["episodes"]["finished"] == 3
        assert [threshold for threshold, _ in SEEN] == [RUN_THRESHOLDS] * 3
        assert all(frozen > 1000 for _, frozen in SEEN)  # modules and the suite: frozen
        assert gc.get_threshold() == (500, 5, 5)  # the caller's own settings come back
        assert gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)


def test_an_inner_use_or_a_disabled_collector_is_left_alone() -> None:
    before = gc.get_threshold()
    with paced_collections():
        gc.set_threshold(123, 4, 5)  # the outer one is in charge: nobody resets this inside
        with paced_collections():
            assert gc.get_threshold() == (123, 4, 5)
        assert gc.get_threshold() == (123, 4, 5)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.disable()
    try:
        with paced_collections():
            assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_failing_run_restores_the_collector_too() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), paced_collections():
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0

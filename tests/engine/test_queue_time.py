"""Time spent waiting for a worker thread or a model slot is recorded apart, never charged."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
import toolproof_test_agents as test_agents

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.engine import EpisodeOptions, run_episode
from toolproof.spec import Limits, Task, render
from toolproof.tools import ToolContext, tool
from toolproof.tools.pool import ToolPool
from toolproof.trajectory import Termination
from toolproof_helpers import make_task


@pytest.fixture
def slow_command(restore_registries: None) -> Iterator[str]:
    @tool(name="tp_test_slow_command", blocking=True)
    def slow_command(ctx: ToolContext) -> str:
        """Blocks its thread for 0.2 s, like a short sandboxed command."""
        time.sleep(0.2)
        return "done"

    yield "tp_test_slow_command"


class CallsOnce:
    def __init__(self, name: str) -> None:
        self.name = name

    async def act(self, observation: Observation) -> AgentTurn:
        if observation.step == 0:
            return test_agents.calls((self.name, {}))
        return AgentTurn(content="7")


async def test_episodes_queued_for_one_thread_are_not_timed_out(slow_command: str) -> None:
    # 12 episodes share one tool thread: the last call waits ~2.2 s for it, far past the
    # 1 s tool timeout and the 2 s episode limit, yet every call runs 0.2 s and succeeds.
    instance = render(
        Task.model_validate(make_task(tools=["get_stock", slow_command])),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(tool_timeout_s=1.0, total_timeout_s=2.0),
        system_prompt="s",
    )
    pool = ToolPool(1)
    options = EpisodeOptions(agent_label="queued", tool_slots=pool)

    def factory(ctx: EpisodeContext) -> Any:
        return CallsOnce(slow_command)

    try:
        episodes = await asyncio.gather(
            *(run_episode(instance, factory, options) for _ in range(12))
        )
    finally:
        pool.close()
    for trajectory, _ in episodes:
        assert trajectory.termination is Termination.COMPLETED, trajectory.error
        assert trajectory.steps[0].results[0].content == "done"
    waits = [t.steps[0].annotations.get("tool_queue_s", 0.0) for t, _ in episodes]
    assert max(waits) > 1.0  # the wait is said, in the step
    assert all(t.steps[0].tool_s < 1.0 for t, _ in episodes)  # and not counted as tool time


async def test_a_turn_waiting_for_a_model_slot_starts_its_clock_with_the_slot() -> None:
    instance = render(
        Task.model_validate(make_task()),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(step_timeout_s=1.0),
        system_prompt="s",
    )

    class Slow:
        async def act(self, observation: Observation) -> AgentTurn:
            await asyncio.sleep(0.3)
            return AgentTurn(content="7")

    options = EpisodeOptions(agent_label="slots", model_slots=asyncio.Semaphore(1))

    def factory(ctx: EpisodeContext) -> Any:
        return Slow()

    episodes = await asyncio.gather(*(run_episode(instance, factory, options) for _ in range(6)))
    assert [t.termination for t, _ in episodes] == [Termination.COMPLETED] * 6
    waits = [t.steps[0].annotations.get("model_queue_s", 0.0) for t, _ in episodes]
    assert max(waits) > 1.0  # the last waited ~1.5 s for its slot, past the step limit

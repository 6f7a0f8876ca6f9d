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


async def _episodes(instance: Any, factory: Any, options: EpisodeOptions, n: int) -> list[Any]:
    """``n`` episodes at once; the pool of ``options`` closed after."""
    try:
        return await asyncio.gather(*(run_episode(instance, factory, options) for _ in range(n)))
    finally:
        if options.tool_slots is not None:
            options.tool_slots.close()


def _instance(tools: list[str] | None = None, **limits: Any) -> Any:
    return render(
        Task.model_validate(make_task() if tools is None else make_task(tools=tools)),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(**limits),
        system_prompt="s",
    )


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
    instance = _instance(["get_stock", slow_command], tool_timeout_s=1.0, total_timeout_s=2.0)
    options = EpisodeOptions(agent_label="queued", tool_slots=ToolPool(1))

    def factory(ctx: EpisodeContext) -> Any:
        return CallsOnce(slow_command)

    episodes = await _episodes(instance, factory, options, 12)
    for trajectory, _ in episodes:
        assert trajectory.termination is Termination.COMPLETED, trajectory.error
        assert trajectory.steps[0].results[0].content == "done"
    waits = [t.steps[0].annotations.get("tool_queue_s", 0.0) for t, _ in episodes]
    assert max(waits) > 1.0  # the wait is said, in the step
    assert all(t.steps[0].tool_s < 1.0 for t, _ in episodes)  # and not counted as tool time


async def test_a_turn_waiting_for_a_model_slot_starts_its_clock_with_the_slot() -> None:
    instance = _instance(step_timeout_s=1.0)

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


async def test_a_call_that_found_a_free_thread_records_no_queue_however_slow_the_hand_over(
    slow_command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a loaded machine the hand-over to a free thread can take milliseconds; that is
    # no queue, and the record must not depend on the load (a replay compares records).
    instance = _instance(["get_stock", slow_command])
    pool = ToolPool(4)
    real_pool = pool._pool

    def slow_submit() -> Any:
        executor = real_pool()
        submit = executor.submit

        def delayed(fn: Any) -> Any:
            return submit(lambda: (time.sleep(0.01), fn())[1])

        monkeypatch.setattr(executor, "submit", delayed)
        return executor

    monkeypatch.setattr(pool, "_pool", slow_submit)
    options = EpisodeOptions(agent_label="free", tool_slots=pool)
    episodes = await _episodes(instance, lambda ctx: CallsOnce(slow_command), options, 4)
    for trajectory, _ in episodes:
        assert trajectory.termination is Termination.COMPLETED, trajectory.error
        assert "tool_queue_s" not in trajectory.steps[0].annotations


async def test_a_turn_that_found_a_free_model_slot_records_no_queue() -> None:
    instance = _instance()

    class Answers:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="7")

    slots = asyncio.Semaphore(8)
    real_acquire = slots.acquire

    async def slow_acquire() -> bool:  # a free slot, handed over late (a busy loop)
        time.sleep(0.005)
        return await real_acquire()

    slots.acquire = slow_acquire  # type: ignore[method-assign]
    options = EpisodeOptions(agent_label="free", model_slots=slots)
    episodes = await asyncio.gather(
        *(run_episode(instance, lambda ctx: Answers(), options) for _ in range(4))
    )
    for trajectory, _ in episodes:
        assert trajectory.termination is Termination.COMPLETED, trajectory.error
        assert "model_queue_s" not in trajectory.steps[0].annotations

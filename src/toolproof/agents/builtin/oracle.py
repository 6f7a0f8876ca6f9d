"""``oracle``: plays the task's reference solution, proving the task solvable.

It is harness-side code: its factory is a :func:`~toolproof.agents.with_key` one,
so the engine hands it the rendered task (a user's agent never gets that).
"""

from __future__ import annotations

import asyncio

from toolproof.spec import SolutionCall, TaskInstance
from toolproof.trajectory import ToolCall

from ..base import (
    AgentFactory,
    AgentSpec,
    AgentTurn,
    EpisodeContext,
    Observation,
    agent,
    with_key,
)


class OracleAgent:
    """Makes the reference calls turn by turn, then gives the reference answer.

    ``delay_s`` simulates a model's thinking time per turn (for benchmarks and
    tests of concurrency); it does not change what the oracle does.
    """

    def __init__(self, instance: TaskInstance, delay_s: float = 0.0) -> None:
        self._delay_s = delay_s
        solution = instance.task.solution
        self._turns: list[list[SolutionCall]] = [
            item if isinstance(item, list) else [item] for item in solution.calls
        ]
        self._answer = solution.answer

    async def act(self, observation: Observation) -> AgentTurn:
        """The next reference turn, or the answer when none is left."""
        index = observation.step
        if self._delay_s > 0:
            await asyncio.sleep(self._delay_s)
        if index < len(self._turns):
            calls = [
                ToolCall(id=f"call_{index}_{n}", name=c.tool, arguments=dict(c.args))
                for n, c in enumerate(self._turns[index])
            ]
            return AgentTurn(tool_calls=calls)
        return AgentTurn(content=self._answer)


@agent("oracle")
def build(spec: AgentSpec) -> AgentFactory:
    """``oracle`` (``--agent-arg delay_s=0.2`` adds think time per turn)."""
    delay_s = float(spec.options.get("delay_s", 0.0))

    def factory(ctx: EpisodeContext, instance: TaskInstance) -> OracleAgent:
        return OracleAgent(instance, delay_s)

    return with_key(factory)

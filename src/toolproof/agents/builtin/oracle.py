"""``oracle``: plays the task's reference solution, proving the task solvable."""

from __future__ import annotations

from toolproof.spec import SolutionCall
from toolproof.trajectory import ToolCall

from ..base import AgentFactory, AgentSpec, AgentTurn, EpisodeContext, Observation, agent


class OracleAgent:
    """Makes the reference calls turn by turn, then gives the reference answer."""

    def __init__(self, ctx: EpisodeContext) -> None:
        solution = ctx.instance.task.solution
        self._turns: list[list[SolutionCall]] = [
            item if isinstance(item, list) else [item] for item in solution.calls
        ]
        self._answer = solution.answer

    async def act(self, observation: Observation) -> AgentTurn:
        """The next reference turn, or the answer when none is left."""
        index = observation.step
        if index < len(self._turns):
            calls = [
                ToolCall(id=f"call_{index}_{n}", name=c.tool, arguments=dict(c.args))
                for n, c in enumerate(self._turns[index])
            ]
            return AgentTurn(tool_calls=calls)
        return AgentTurn(content=self._answer)


@agent("oracle")
def build(spec: AgentSpec) -> AgentFactory:
    """Oracle takes no target or options."""
    return OracleAgent

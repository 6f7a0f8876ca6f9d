"""``oracle``: plays the task's reference solution, proving the task solvable.

It is harness-side code: its factory is a :func:`~toolproof.agents.with_key` one,
so the engine hands it the rendered task (a user's agent never gets that).
"""

from __future__ import annotations

import asyncio

from toolproof.spec import ANSWER_TOOL, SolutionCall, TaskInstance
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

    A task with a typed answer gets it the way every agent should: the reference
    value (``solution.submit``) handed in with ``submit_answer``, which ends the episode.

    ``delay_s`` simulates a model's thinking time per turn (for benchmarks and
    tests of concurrency); it does not change what the oracle does.
    """

    def __init__(self, instance: TaskInstance, delay_s: float = 0.0) -> None:
        self._delay_s = delay_s
        solution = instance.task.solution
        plays = [(solution.calls, solution.answer)]
        plays += [(turn.calls, turn.answer) for turn in solution.turns]
        self._plays: list[tuple[list[list[SolutionCall]], str]] = [
            ([item if isinstance(item, list) else [item] for item in calls], answer)
            for calls, answer in plays
        ]
        typed = instance.task.answer is not None and solution.submit is not None
        self._submit: tuple[object] | None = (solution.submit,) if typed else None

    async def act(self, observation: Observation) -> AgentTurn:
        """The next reference turn, or the answer when none is left.

        With further user turns, the user messages seen so far say which turn is on
        and the assistant messages since the last of them how far into it the oracle is.
        """
        user_turn, index = 0, observation.step
        if len(self._plays) > 1:
            roles = [m.role for m in observation.messages]
            user_turn = max(roles.count("user") - 1, 0)
            last_user = len(roles) - 1 - roles[::-1].index("user") if "user" in roles else 0
            index = roles[last_user:].count("assistant")
        if self._delay_s > 0:
            await asyncio.sleep(self._delay_s)
        calls, answer = self._plays[min(user_turn, len(self._plays) - 1)]
        if user_turn >= len(self._plays):
            calls = []
        if index < len(calls):
            made = [
                ToolCall(id=f"call_{observation.step}_{n}", name=c.tool, arguments=dict(c.args))
                for n, c in enumerate(calls[index])
            ]
            return AgentTurn(tool_calls=made)
        if self._submit is not None and user_turn >= len(self._plays) - 1:
            arguments = {"answer": self._submit[0]}
            submit = ToolCall(
                id=f"call_{observation.step}_0", name=ANSWER_TOOL, arguments=arguments
            )
            return AgentTurn(tool_calls=[submit])
        return AgentTurn(content=answer)


@agent("oracle")
def build(spec: AgentSpec) -> AgentFactory:
    """``oracle`` (``--agent-arg delay_s=0.2`` adds think time per turn)."""
    delay_s = float(spec.options.get("delay_s", 0.0))

    def factory(ctx: EpisodeContext, instance: TaskInstance) -> OracleAgent:
        return OracleAgent(instance, delay_s)

    return with_key(factory)

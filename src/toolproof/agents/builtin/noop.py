"""``noop``: answers at once and does nothing; no task may pass with it."""

from __future__ import annotations

from ..base import AgentFactory, AgentSpec, AgentTurn, EpisodeContext, Observation, agent


class NoopAgent:
    """Gives an empty final answer on the first turn (or ``answer=...`` if given)."""

    def __init__(self, answer: str = "") -> None:
        self._answer = answer

    async def act(self, observation: Observation) -> AgentTurn:
        """Answer immediately."""
        return AgentTurn(content=self._answer)


@agent("noop")
def build(spec: AgentSpec) -> AgentFactory:
    """``noop`` or ``noop --agent-arg answer=done``."""
    answer = str(spec.options.get("answer", ""))

    def factory(ctx: EpisodeContext) -> NoopAgent:
        return NoopAgent(answer)

    return factory

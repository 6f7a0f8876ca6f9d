"""Deliberately broken agents (``python:scoring.broken_agents:NAME``) with known failure modes."""

from __future__ import annotations

from toolproof.agents import AgentTurn, Observation
from toolproof.trajectory import ToolCall


class WrongToolFirst:
    """Calls a tool nobody offered, then answers without looking anything up."""

    async def act(self, observation: Observation) -> AgentTurn:
        """Step 0: the wrong tool; then a vague answer."""
        if observation.step == 0:
            return AgentTurn(tool_calls=[ToolCall(id="w0", name="lookup_everything", arguments={})])
        return AgentTurn(content="I could not find out.")


class InvalidArguments:
    """Calls the first offered tool that has required arguments without any, then answers."""

    async def act(self, observation: Observation) -> AgentTurn:
        """Step 0: a call that fails schema validation; then a vague answer."""
        if observation.step == 0:
            tool = next(t for t in observation.tools if t.parameters.get("required"))
            bogus = {"unexpected": 1}
            return AgentTurn(tool_calls=[ToolCall(id="i0", name=tool.name, arguments=bogus)])
        return AgentTurn(content="I could not find out.")

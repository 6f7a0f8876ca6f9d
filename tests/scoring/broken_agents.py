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


class DumpsEverything:
    """Calls every offered tool that needs no argument, then answers with every value it
    saw (the prompt's words included), one per line: an answer that is no answer."""

    def __init__(self) -> None:
        from toolproof.agents.builtin.random_agent import Seen

        self.seen = Seen()

    async def act(self, observation: Observation) -> AgentTurn:
        """Step 0: every argument-free tool at once; then the dump."""
        for message in observation.messages:
            if message.role in ("user", "tool"):
                self.seen.add_text(message.content or "")
        if observation.step == 0:
            calls = [
                ToolCall(id=f"d{n}", name=tool.name, arguments={})
                for n, tool in enumerate(observation.tools)
                if not tool.parameters.get("required")
            ]
            if calls:
                return AgentTurn(tool_calls=calls)
        return AgentTurn(content="\n".join(str(value) for value in self.seen.values))
